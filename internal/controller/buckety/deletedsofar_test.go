package buckety

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestDeletedSoFarIsKeptByNameAndForgotten: what a deletion in progress
// removed so far is kept one entry per Buckety name. A tenant who removes
// the finalizer by hand while the bucket is being emptied, and makes the
// Buckety again under the same name, over and over, leaves no entry behind
// each time (it was kept by UID, and dropped only when a deletion ended):
// the pass that finds the name gone drops it, and a Buckety made again
// under the name counts from nothing.
func TestDeletedSoFarIsKeptByNameAndForgotten(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: "emptied"}
	r := &Reconciler{}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: "uid-1"}}
	if got := r.addDeleted(b, 1000); got != 1000 {
		t.Fatalf("first step: want 1000 removed so far, got %d", got)
	}
	if got := r.addDeleted(b, 500); got != 1500 {
		t.Fatalf("second step: want 1500 removed so far, got %d", got)
	}
	again := b.DeepCopy()
	again.UID = "uid-2"
	if got := r.addDeleted(again, 10); got != 10 {
		t.Errorf("a Buckety made again under the name: want it to count from nothing (10), got %d", got)
	}
	if len(r.deleted) != 1 {
		t.Errorf("want one entry for the name, got %v", r.deleted)
	}

	r.Client = fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if len(r.deleted) != 0 {
		t.Errorf("the name not found by its pass (finalizer removed by hand): want its count dropped, got %v", r.deleted)
	}
}
