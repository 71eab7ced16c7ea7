package access

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// ownedSecret is Secret name in namespace ns as buckety writes it for the
// access named access with UID owner.
func ownedSecret(ns, name, access string, owner types.UID) *corev1.Secret {
	controller := true
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns, UID: types.UID("secret-of-" + owner),
		Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: access},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess",
			Name: access, UID: owner, Controller: &controller}},
	}}
}

// TestDeletedAccessDeletesItsSecretPastAStaleCache: an access being
// deleted whose cache, catching up after an API server restart, still
// shows the Secret an earlier access of the same name had (a Buckety
// deleted and made again, its defaultAccess with it) deletes its own
// Secret, which only the API server shows; a Secret of anyone else's
// there is left alone. The fault harness's apiserver-restart-churn left
// such a Secret behind once (2026-12-05, under load).
func TestDeletedAccessDeletesItsSecretPastAStaleCache(t *testing.T) {
	const ns = "t"
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "b003", Namespace: ns, UID: "new"},
		Spec: v1.BucketyAccessSpec{CredentialsSecretName: "b003-default"}}
	for _, tc := range []struct {
		name     string
		inAPI    *corev1.Secret
		wantGone bool
	}{
		{"its own Secret is deleted", ownedSecret(ns, "b003-default", "b003", "new"), true},
		{"another's Secret is kept", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b003-default", Namespace: ns, UID: "tenants"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testScheme(t)
			api := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.inAPI).Build()
			stale := fake.NewClientBuilder().WithScheme(s).WithObjects(ownedSecret(ns, "b003-default", "b003", "old")).Build()
			// The cache's reads are stale; writes go to the API server.
			cache := interceptor.NewClient(stale, interceptor.Funcs{
				Delete: func(ctx context.Context, _ client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					return api.Delete(ctx, obj, opts...)
				},
			})
			r := &Reconciler{Client: cache, APIReader: api}
			if err := r.deleteOwnSecret(context.Background(), a, true); err != nil {
				t.Fatal(err)
			}
			err := api.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "b003-default"}, &corev1.Secret{})
			if gone := apierrors.IsNotFound(err); gone != tc.wantGone || (err != nil && !gone) {
				t.Fatalf("want the API server's Secret gone=%v, got err %v", tc.wantGone, err)
			}
		})
	}
}
