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
