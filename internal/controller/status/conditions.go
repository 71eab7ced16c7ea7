package status

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cond is one condition as a status function derives it.
type Cond struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message string
	// Quiet marks a normal condition that says nothing beyond it (False,
	// reason AsExpected, NoDrain, BelowQuota without a quota,
	// NotApplicable): Apply leaves it off a list that does not carry its
	// type. See Apply.
	Quiet bool
}

// Apply sets every derived condition on list, keeping transition times of
// conditions whose status did not change. A quiet condition (Cond.Quiet)
// is set only on a list that already carries its type: an object shows
// such a type from the first time it was True or Unknown (or said
// something in its False) and then keeps it, so a recovery stays visible
// with its transition time, while an object that never left the normal
// state carries only the conditions that say something. Each condition in
// a status costs the API server on every write of it, about a quarter of
// a Buckety's status write for its seven quiet ones (docs/performance.md,
// "Conditions that say nothing"); and an object written before quiet
// conditions were left off keeps them, so no upgrade rewrites a status.
// Transition times are kept to
// the second, as the API server stores them: a time read back from it
// then equals the one set, and a status that changed nothing else is not
// patched (a patch with nothing in it is still a write request), which
// one a pass held in memory (buckety.Held) and the one the cache shows
// would otherwise be, a fraction of a second apart.
func Apply(list *[]metav1.Condition, generation int64, conds []Cond) {
	for _, c := range conds {
		if c.Quiet && meta.FindStatusCondition(*list, c.Type) == nil {
			continue
		}
		meta.SetStatusCondition(list, metav1.Condition{
			Type: c.Type, Status: c.Status, Reason: c.Reason, Message: truncate(c.Message), ObservedGeneration: generation,
		})
	}
	for i := range *list {
		t := &(*list)[i].LastTransitionTime
		*t = t.Rfc3339Copy()
	}
}

// maxMessage is the longest condition message written, in bytes: well
// under the API's 32 KiB limit, and still readable in kubectl describe.
const maxMessage = 4096

// truncate keeps a message within maxMessage bytes, ending it with "..."
// when cut. The cut falls on a character boundary: a multi-byte UTF-8
// character split in two would make the message invalid UTF-8, which the
// JSON encoding of the status patch turns into U+FFFD.
func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// True, False and Unknown build conditions.
func True(t, reason, msg string) Cond {
	return Cond{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
}

// False builds a False condition.
func False(t, reason, msg string) Cond {
	return Cond{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

// Quiet builds a quiet False condition (Cond.Quiet): the normal state of
// an abnormal-true type, with nothing to say beyond it.
func Quiet(t, reason, msg string) Cond {
	return Cond{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: msg, Quiet: true}
}

// Shows reports whether list shows c as Apply would leave it: the same
// status and reason, or, for a quiet c, no condition of its type.
func Shows(list []metav1.Condition, c Cond) bool {
	have := meta.FindStatusCondition(list, c.Type)
	if have == nil {
		return c.Quiet
	}
	return have.Status == c.Status && have.Reason == c.Reason
}

// Unknown builds an Unknown condition.
func Unknown(t, reason, msg string) Cond {
	return Cond{Type: t, Status: metav1.ConditionUnknown, Reason: reason, Message: msg}
}
