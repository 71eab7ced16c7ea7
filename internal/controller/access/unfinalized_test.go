package access

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestUnfinalizedAccessIsStillWithdrawn: an access of namespace b granted
// on Buckety a/x, which no longer shares with b, whose finalizer cannot be
// written (its tenant grew it by metadata patches to just under the API
// server's request limit and removed the finalizer: every patch is "too
// large"). The pass still withdraws it: its credential is revoked and its
// record deleted, and the finalizer's failure is reported. Before, the
// pass ended at the failed write, and the credential outlived the owner's
// consent for good. The same for an access naming several, one of which
// (a/x) stopped sharing while the other (b/y) still shares: nothing is
// granted, so it gives up all of them. And for an access whose Buckety
// (b/gone) no longer exists, whose credential goes with it.
func TestUnfinalizedAccessIsStillWithdrawn(t *testing.T) {
	y, x := v1.BucketyReference{Name: "y"}, v1.BucketyReference{Namespace: "a", Name: "x"}
	for _, tc := range []struct {
		name string
		ref  v1.BucketyReference
		refs []v1.BucketyReference
	}{
		{"naming one", x, nil},
		{"naming several", v1.BucketyReference{}, []v1.BucketyReference{y, x}},
		{"naming one gone", v1.BucketyReference{Name: "gone"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := severalGranted(tc.refs...)
			if tc.refs == nil {
				a.Spec.BucketyRef = tc.ref
			}
			// a/x shares with nobody now; b/y is b's own.
			r, svc, _ := severalEnv(t, provisioned("b", "y", "svc"), provisioned("a", "x", "svc"), a.DeepCopy(), rec.DeepCopy(),
				ownedSecret(a.Namespace, a.Spec.CredentialsSecretName, a.Name, a.UID))
			tooLarge := apierrors.NewRequestEntityTooLargeError("limit is 3145728")
			refused := 0
			r.Client = interceptor.NewClient(r.Client.(client.WithWatch), interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*v1.BucketyAccess); ok {
						refused++
						return tooLarge
					}
					return c.Patch(ctx, obj, patch, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if _, ok := obj.(*v1.BucketyAccess); ok {
						refused++
						return tooLarge
					}
					return c.Update(ctx, obj, opts...)
				},
			})
			ctx := context.Background()
			_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
			if refused == 0 || !apierrors.IsRequestEntityTooLargeError(err) {
				t.Fatalf("want the finalizer's write refused and reported, got %d refusals and %v", refused, err)
			}
			if n, got := svc.Calls("revoke"), svc.LastAccess("revoke").Principal; n != 1 || got != "p1" {
				t.Errorf("want credential p1 revoked on svc although the finalizer could not be written, got %d revocations (last of %q)", n, got)
			}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rec), &v1.BucketyCredential{}); !apierrors.IsNotFound(err) {
				t.Errorf("want the credential's record deleted, got %v", err)
			}
			if n := svc.Calls("grant"); n != 0 {
				t.Errorf("want nothing granted without the finalizer, got %d grants", n)
			}
		})
	}
}
