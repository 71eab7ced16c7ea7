package buckety

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

// TestAccessWrittenForAnotherBackendIsPending: Buckety team/orders, at
// generation 1 on backend s3, is the second of its name: the first was
// deleted with its finalizer removed. Its access's status still shows the
// Secret written for generation 1, on backend old, or on s3 for the first
// one's UID: the Buckety counts it pending (not Ready on another
// Buckety's Secret); the same status written for this one, or on s3 by
// a release that recorded no UID, is not.
func TestAccessWrittenForAnotherBackendIsPending(t *testing.T) {
	ctx := context.Background()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orders", UID: "uid-again", Generation: 1},
		Spec: v1.BucketySpec{Backend: "s3"}, Status: v1.BucketyStatus{Backend: "s3"}}
	for _, c := range []struct {
		backend string
		uid     types.UID
		pending bool
	}{{"old", "", true}, {"s3", "", false}, {"", "", false}, {"s3", "uid-first", true}, {"s3", "uid-again", false}} {
		t.Run("written on "+c.backend+" for "+string(c.uid), func(t *testing.T) {
			a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "reader", Generation: 1},
				Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "reader"}}
			a.Status.ObservedGeneration, a.Status.BucketyGeneration, a.Status.Backend, a.Status.BucketyUID = 1, 1, c.backend, c.uid
			status.Apply(&a.Status.Conditions, 1, []status.Cond{{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled}})
			r := accessesEnv(t, a)
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

// TestImplicitAccessBeingDeletedIsPending: Buckety team/orders asks for
// its implicit access, whose only one is being deleted (its Secret
// renamed by spec.defaultAccess, or another Buckety's of this name): the
// Buckety counts it pending until the new one is Ready, not Ready on no
// access at all.
func TestImplicitAccessBeingDeletedIsPending(t *testing.T) {
	ctx := context.Background()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orders", UID: "uid-orders", Generation: 2},
		Spec: v1.BucketySpec{Backend: "s3", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "new"}}, Status: v1.BucketyStatus{Backend: "s3"}}
	yes := true
	now := metav1.Now()
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orders", Generation: 1, Finalizers: []string{v1.Finalizer}, DeletionTimestamp: &now,
		Labels:          map[string]string{v1.ImplicitLabel: "true"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "Buckety", Name: "orders", UID: b.UID, Controller: &yes}}},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "old"}}
	a.Status.ObservedGeneration, a.Status.BucketyGeneration, a.Status.Backend = 1, 2, "s3"
	status.Apply(&a.Status.Conditions, 1, []status.Cond{{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled}})
	r := accessesEnv(t, a)
	f := &facts{}
	if err := r.reconcileAccesses(ctx, b, f); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(f.accessesPending, "orders") {
		t.Errorf("want the implicit access pending while the only one is being deleted, got %v", f.accessesPending)
	}
}

// accessesEnv is a Reconciler on a fake cache holding objs, with the
// index the accesses of a Buckety are listed by.
func accessesEnv(t *testing.T, objs ...client.Object) *Reconciler {
	t.Helper()
	cl := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithIndex(&v1.BucketyAccess{}, objects.IndexBucketyRef, func(o client.Object) []string {
			return objects.RefKeys(o.(*v1.BucketyAccess))
		}).Build()
	return &Reconciler{Client: cl}
}
