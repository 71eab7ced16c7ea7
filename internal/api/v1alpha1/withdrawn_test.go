package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWithdrawn: an access naming another namespace's Buckety is withdrawn
// when it reports NotShared and holds no principal and no Secret, for any
// generation of its spec: a consumer changing spec.rotation of a withdrawn
// access (a new generation its condition was not written for yet) does not
// make it hold its owner's deletion back. Holding a principal or a Secret,
// or naming its own namespace's Buckety, it is not withdrawn.
func TestWithdrawn(t *testing.T) {
	mk := func(gen, observed int64, reason, principal string, bucketyGen int64, foreign bool) *BucketyAccess {
		a := &BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "consumer", Name: "reader", Generation: gen},
			Spec: BucketyAccessSpec{BucketyRef: BucketyReference{Name: "orders"}}}
		if foreign {
			a.Spec.BucketyRef.Namespace = "owner"
		}
		a.Status.Principal, a.Status.BucketyGeneration = principal, bucketyGen
		a.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: observed}}
		return a
	}
	for _, c := range []struct {
		name string
		a    *BucketyAccess
		want bool
	}{
		{"NotShared, nothing held", mk(3, 3, ReasonNotShared, "", 0, true), true},
		{"NotShared for an earlier generation (spec.rotation changed since)", mk(7, 3, ReasonNotShared, "", 0, true), true},
		{"a principal still held", mk(3, 3, ReasonNotShared, "u-1", 0, true), false},
		{"a Secret still written", mk(3, 3, ReasonNotShared, "", 2, true), false},
		{"another reason", mk(3, 3, ReasonReconciled, "", 0, true), false},
		{"its own namespace's Buckety", mk(3, 3, ReasonNotShared, "", 0, false), false},
	} {
		if got := c.a.Withdrawn(); got != c.want {
			t.Errorf("%s: Withdrawn() = %v, want %v", c.name, got, c.want)
		}
		if got := c.a.WithdrawnFrom("owner", "orders"); got != c.want {
			t.Errorf("%s: WithdrawnFrom = %v, want %v", c.name, got, c.want)
		}
	}
}
