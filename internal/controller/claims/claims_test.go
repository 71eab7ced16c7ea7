package claims

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

func TestDeletable(t *testing.T) {
	for _, c := range []struct {
		phase         v1.ClaimPhase
		deleteAdopted bool
		want          bool
	}{
		{v1.ClaimClaimed, true, false},
		{v1.ClaimCreating, false, true},
		{v1.ClaimCreated, false, true},
		{v1.ClaimAdopting, true, false},
		{v1.ClaimAdopted, false, false},
		{v1.ClaimAdopted, true, true},
	} {
		cl := &v1.BucketyClaim{Spec: v1.BucketyClaimSpec{Phase: c.phase}}
		if got := Deletable(cl, c.deleteAdopted); got != c.want {
			t.Errorf("%s with deleteAdopted=%v: want %v, got %v", c.phase, c.deleteAdopted, c.want, got)
		}
	}
}

// TestReleaseRefusesStaleRead: a claim read before it advanced (a cache
// that lags: Claimed there, Created on the API server) is not released on
// that read; the claim read as it is now is.
func TestReleaseRefusesStaleRead(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).Build()
	claims := &Store{Client: c, APIReader: c}
	ctx := context.Background()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "team", UID: "uid-1"}}
	cl, conflict, err := claims.Acquire(ctx, b, "kafka", "team.orders")
	if err != nil || conflict != nil {
		t.Fatalf("acquire: %v %v", err, conflict)
	}
	stale := cl.DeepCopy()
	for _, p := range []v1.ClaimPhase{v1.ClaimCreating, v1.ClaimCreated} {
		if err := claims.Advance(ctx, cl, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := claims.Release(ctx, stale); err == nil || !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Errorf("release of the claim as read while Claimed: want a conflict, got %v", err)
	}
	cur := &v1.BucketyClaim{}
	if err := c.Get(ctx, types.NamespacedName{Name: cl.Name}, cur); err != nil || cur.Spec.Phase != v1.ClaimCreated {
		t.Fatalf("want the Created claim kept, got %v %v", cur.Spec.Phase, err)
	}
	if err := claims.Release(ctx, cur); err != nil {
		t.Errorf("release of the claim as it is: %v", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: cl.Name}, cur); !apierrors.IsNotFound(err) {
		t.Errorf("want the claim released, got %v", err)
	}
	if err := claims.Release(ctx, cur); err != nil {
		t.Errorf("release of a claim already gone: want nil, got %v", err)
	}
}
