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
}

// Apply sets every derived condition on list, keeping transition times of
// conditions whose status did not change. Transition times are kept to
// the second, as the API server stores them: a time read back from it
// then equals the one set, and a status that changed nothing else is not
// patched (a patch with nothing in it is still a write request), which
// one a pass held in memory (buckety.Held) and the one the cache shows
// would otherwise be, a fraction of a second apart.
func Apply(list *[]metav1.Condition, generation int64, conds []Cond) {
	for _, c := range conds {
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

// Unknown builds an Unknown condition.
func Unknown(t, reason, msg string) Cond {
	return Cond{Type: t, Status: metav1.ConditionUnknown, Reason: reason, Message: msg}
}
