package objects

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Settled reports whether an object with this status (its observed
// generation and conditions) needs nothing from a pass but a re-check:
// Ready for its current generation, and not being deleted.
func Settled(o client.Object, observedGeneration int64, conditions []metav1.Condition) bool {
	return o.GetDeletionTimestamp().IsZero() && observedGeneration == o.GetGeneration() &&
		meta.IsStatusConditionTrue(conditions, v1.ConditionReady)
}

// BucketySettled is Settled for a Buckety (false for any other object).
// A start's settled Bucketies are queued after the other work
// (queue.SettledLater), and queue their accesses so (queue.LaterAtStart).
func BucketySettled(o client.Object) bool {
	b, ok := o.(*v1.Buckety)
	return ok && Settled(b, b.Status.ObservedGeneration, b.Status.Conditions)
}

// AccessSettled is Settled for an access (false for any other object).
// A start's settled accesses are queued after the other work
// (queue.SettledLater), and queue their Bucketies so (queue.LaterAtStart).
func AccessSettled(o client.Object) bool {
	a, ok := o.(*v1.BucketyAccess)
	return ok && Settled(a, a.Status.ObservedGeneration, a.Status.Conditions)
}
