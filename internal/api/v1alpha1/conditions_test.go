package v1alpha1

import (
	"strings"
	"testing"
)

// TestConditionDeclarations: every declared condition says what True means
// (README's table is generated from it), a type both kinds carry is
// declared the same way in both, and only a negative type can be carried
// as always False.
func TestConditionDeclarations(t *testing.T) {
	seen := map[string]ConditionDecl{}
	for kind, decls := range map[string][]ConditionDecl{"Buckety": BucketyConditions, "BucketyAccess": BucketyAccessConditions} {
		types := map[string]bool{}
		for _, d := range decls {
			if types[d.Type] {
				t.Errorf("%s: %s declared twice", kind, d.Type)
			}
			types[d.Type] = true
			if d.Polarity != Positive && d.Polarity != Negative {
				t.Errorf("%s %s: want polarity Positive or Negative, got %q", kind, d.Type, d.Polarity)
			}
			if strings.TrimSpace(d.TrueMeans) == "" || strings.Contains(d.TrueMeans, "\n") {
				t.Errorf("%s %s: want a one-line TrueMeans, got %q", kind, d.Type, d.TrueMeans)
			}
			if d.AlwaysFalse && d.Polarity != Negative {
				t.Errorf("%s %s: want only negative types always False, got %s", kind, d.Type, d.Polarity)
			}
			general := d
			general.AlwaysFalse = false
			if prev, ok := seen[d.Type]; ok && prev != general {
				t.Errorf("%s: declared as %+v and as %+v", d.Type, prev, general)
			}
			seen[d.Type] = general
		}
		if !types[ConditionReady] || !types[ConditionReconciling] {
			t.Errorf("%s: want Ready and Reconciling (kstatus), got %v", kind, types)
		}
	}
}
