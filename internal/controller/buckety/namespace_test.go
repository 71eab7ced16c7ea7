package buckety

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestNamespaceRelabelled: only an update that changes a namespace's
// labels passes; its creation, deletion, and other updates do not.
func TestNamespaceRelabelled(t *testing.T) {
	ns := func(labels map[string]string, annotations map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: labels, Annotations: annotations}}
	}
	plain := ns(map[string]string{"a": "1"}, nil)
	p := namespaceRelabelled()
	for _, c := range []struct {
		name     string
		old, new *corev1.Namespace
		want     bool
	}{
		{"a label added", plain, ns(map[string]string{"a": "1", "tier": "gold"}, nil), true},
		{"a label changed", plain, ns(map[string]string{"a": "2"}, nil), true},
		{"a label removed", plain, ns(nil, nil), true},
		{"an annotation only", plain, ns(map[string]string{"a": "1"}, map[string]string{"x": "y"}), false},
		{"nothing", plain, plain.DeepCopy(), false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: want %v, got %v", c.name, c.want, got)
		}
	}
	if p.Create(event.CreateEvent{Object: plain}) || p.Delete(event.DeleteEvent{Object: plain}) || p.Generic(event.GenericEvent{Object: plain}) {
		t.Error("want a namespace's creation, deletion and generic events dropped")
	}
}

// TestWaitsForRoom: a Buckety refused for its namespace's budget or count
// limit waits for room; any other state does not.
func TestWaitsForRoom(t *testing.T) {
	with := func(status metav1.ConditionStatus, reason string) *v1.Buckety {
		b := &v1.Buckety{}
		if reason != "" {
			b.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: status, Reason: reason}}
		}
		return b
	}
	for _, c := range []struct {
		name string
		b    *v1.Buckety
		want bool
	}{
		{"over its budget", with(metav1.ConditionFalse, v1.ReasonBudgetExceeded), true},
		{"at its namespace's count limit", with(metav1.ConditionFalse, v1.ReasonLimitExceeded), true},
		{"ready", with(metav1.ConditionTrue, v1.ReasonReconciled), false},
		{"another refusal", with(metav1.ConditionFalse, v1.ReasonNameConflict), false},
		{"no condition yet", with("", ""), false},
	} {
		if got := waitsForRoom(c.b); got != c.want {
			t.Errorf("%s: want %v, got %v", c.name, c.want, got)
		}
	}
}
