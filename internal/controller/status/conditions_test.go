package status

import (
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTruncateKeepsCharactersWhole cuts messages of one- to four-byte
// characters at every offset around the limit: the result is valid UTF-8,
// within the limit, ends with "..." when cut, and keeps everything before
// the cut.
func TestTruncateKeepsCharactersWhole(t *testing.T) {
	for _, ch := range []string{"a", "ä", "€", "🪣"} {
		for pad := range 8 {
			msg := strings.Repeat("x", pad) + strings.Repeat(ch, maxMessage/len(ch)+2)
			got := truncate(msg)
			if !utf8.ValidString(got) {
				t.Errorf("%q after %d bytes of padding: want valid UTF-8, got a cut character at the end: %q", ch, pad, got[len(got)-8:])
			}
			if len(got) > maxMessage {
				t.Errorf("%q after %d bytes of padding: want at most %d bytes, got %d", ch, pad, maxMessage, len(got))
			}
			if !strings.HasSuffix(got, "...") {
				t.Errorf("%q after %d bytes of padding: want a cut message to end with ..., got %q", ch, pad, got[len(got)-8:])
			}
			if kept := strings.TrimSuffix(got, "..."); !strings.HasPrefix(msg, kept) || len(kept) < maxMessage-len("...")-utf8.UTFMax+1 {
				t.Errorf("%q after %d bytes of padding: want the message kept up to the last whole character before the cut, got %d bytes", ch, pad, len(kept))
			}
		}
	}
}

func TestTruncateLeavesShortMessages(t *testing.T) {
	for _, msg := range []string{"", "ok", strings.Repeat("€", maxMessage/3), strings.Repeat("x", maxMessage)} {
		if got := truncate(msg); got != msg {
			t.Errorf("message of %d bytes: want it unchanged, got %d bytes", len(msg), len(got))
		}
	}
}

// TestApplyLeavesQuietConditionsOff: a quiet condition is not added to a
// list without its type, is updated on a list that carries it (a
// recovery shows, with its transition time), and every other condition
// is always set; Shows agrees with what Apply leaves.
func TestApplyLeavesQuietConditionsOff(t *testing.T) {
	quiet := Quiet("Degraded", "AsExpected", "every parameter is applied")
	var list []metav1.Condition
	Apply(&list, 1, []Cond{quiet, True("Ready", "Reconciled", "in sync"), False("Reconciling", "AsExpected", "no work")})
	if got := condTypes(list); got != "Ready,Reconciling" {
		t.Fatalf("fresh status: want Ready,Reconciling (the quiet Degraded left off), got %s", got)
	}
	if !Shows(list, quiet) {
		t.Errorf("want a list without the quiet type to show the quiet condition")
	}

	Apply(&list, 2, []Cond{True("Degraded", "ParameterNotApplied", "p"), False("Ready", "ParameterNotApplied", "p")})
	if c := meta.FindStatusCondition(list, "Degraded"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("want Degraded True once it is abnormal, got %+v", c)
	}
	if Shows(list, quiet) {
		t.Errorf("want a list with Degraded True not to show the quiet condition")
	}
	Apply(&list, 3, []Cond{quiet})
	c := meta.FindStatusCondition(list, "Degraded")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "AsExpected" || c.ObservedGeneration != 3 {
		t.Fatalf("want the recovery kept as Degraded False AsExpected at generation 3, got %+v", c)
	}
	if !Shows(list, quiet) {
		t.Errorf("want a list with Degraded False AsExpected to show the quiet condition")
	}
	if Shows(list, False("Draining", "Drained", "done")) {
		t.Errorf("want a list without Draining not to show a Draining False that is not quiet")
	}
	if got := condTypes(list); got != "Ready,Reconciling,Degraded" {
		t.Errorf("want Ready,Reconciling,Degraded, got %s", got)
	}
}

func condTypes(list []metav1.Condition) string {
	var out []string
	for _, c := range list {
		out = append(out, c.Type)
	}
	return strings.Join(out, ",")
}
