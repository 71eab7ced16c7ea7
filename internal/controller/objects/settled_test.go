package objects

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestSettled: only an object Ready for its current generation and not
// being deleted is settled.
func TestSettled(t *testing.T) {
	ready := []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionTrue}}
	notReady := []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionFalse}}
	obj := func(gen int64, deleting bool) *v1.Buckety {
		o := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "team", Generation: gen}}
		if deleting {
			now := metav1.Now()
			o.DeletionTimestamp = &now
		}
		return o
	}
	for _, c := range []struct {
		name     string
		o        *v1.Buckety
		observed int64
		conds    []metav1.Condition
		want     bool
	}{
		{"Ready for its generation", obj(2, false), 2, ready, true},
		{"changed since its last pass", obj(3, false), 2, ready, false},
		{"not Ready", obj(1, false), 1, notReady, false},
		{"no conditions yet", obj(1, false), 1, nil, false},
		{"being deleted", obj(1, true), 1, ready, false},
	} {
		if got := Settled(c.o, c.observed, c.conds); got != c.want {
			t.Errorf("%s: settled %v, want %v", c.name, got, c.want)
		}
	}
}
