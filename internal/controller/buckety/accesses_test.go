package buckety

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

// TestAccessWrittenForAnotherBackendIsPending: Buckety team/orders, at
// generation 1 on backend s3, is the second of its name: the first, on
// backend old, was deleted with its finalizer removed. Its access's
// status still shows the Secret written for generation 1, on old: the
// Buckety counts it pending (not Ready on another Buckety's Secret); the
// same status written on s3 is not.
func TestAccessWrittenForAnotherBackendIsPending(t *testing.T) {
	ctx := context.Background()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orders", UID: "uid-again", Generation: 1},
		Spec: v1.BucketySpec{Backend: "s3"}, Status: v1.BucketyStatus{Backend: "s3"}}
	for _, c := range []struct {
		backend string
		pending bool
	}{{"old", true}, {"s3", false}, {"", false}} {
		t.Run("written on "+c.backend, func(t *testing.T) {
			a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "reader", Generation: 1},
				Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "reader"}}
			a.Status.ObservedGeneration, a.Status.BucketyGeneration, a.Status.Backend = 1, 1, c.backend
			status.Apply(&a.Status.Conditions, 1, []status.Cond{{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled}})
			cl := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(a).
				WithIndex(&v1.BucketyAccess{}, objects.IndexBucketyRef, func(o client.Object) []string {
					a := o.(*v1.BucketyAccess)
					return []string{objects.RefKey(a.BucketyNamespace(), a.Spec.BucketyRef.Name)}
				}).Build()
			r := &Reconciler{Client: cl}
			f := &facts{}
			if err := r.reconcileAccesses(ctx, b.DeepCopy(), f); err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(f.accessesPending, "reader"); got != c.pending {
				t.Errorf("want pending %v, got %v (%v)", c.pending, got, f.accessesPending)
			}
		})
	}
}
