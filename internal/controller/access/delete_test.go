package access

import (
	"context"
	"testing"
	"time"

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

// pinned is access a being deleted, buckety's finalizer taken off by its
// tenant and the access held by one of the tenant's own.
func pinned(a *v1.BucketyAccess) *v1.BucketyAccess {
	p := a.DeepCopy()
	now := metav1.Now()
	p.DeletionTimestamp = &now
	p.Finalizers = []string{"tenant.example/pin"}
	return p
}

// TestPinnedDeletedAccessIsRevoked: a tenant takes buckety's finalizer
// off its access, holds the access with a finalizer of its own and
// deletes it. The access's pass revokes its credential on the broker,
// deletes the record and the Secret all the same. It used to end at once
// without buckety's finalizer: the access, never gone, kept a working
// credential on its Buckety (another namespace's, shared) past the
// owner's withdrawal of the sharing, and past the access limits, which
// count no access being deleted.
func TestPinnedDeletedAccessIsRevoked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	f := newRecordedAccess(t, true)
	ctx := context.Background()
	a := pinned(f.a)
	a.Spec.CredentialsSecretName = "multi-kafka"
	sec := ownedSecret(a.Namespace, a.Spec.CredentialsSecretName, a.Name, a.UID)
	for _, c := range []client.Client{f.api, f.cache} {
		if err := c.Create(ctx, sec.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.r.reconcileDelete(ctx, a, &facts{}); err != nil {
		t.Fatal(err)
	}
	if scramUsers(t, f.adm)[f.principal] {
		t.Errorf("want user %s revoked on the broker, still there", f.principal)
	}
	if err := f.api.Get(ctx, client.ObjectKeyFromObject(f.rec), &v1.BucketyCredential{}); !apierrors.IsNotFound(err) {
		t.Errorf("want the credential's record deleted, got %v", err)
	}
	if err := f.api.Get(ctx, client.ObjectKeyFromObject(sec), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("want the access's Secret deleted, got %v", err)
	}
}

// TestOrphanCheckRevokesForAPinnedDeletedAccess: the orphan check takes a
// credential whose access is being deleted without buckety's finalizer
// (its tenant's holds it) for one whose access is gone, where the
// access's own passes did not run or failed; with buckety's finalizer
// still on, the access's deletion is buckety's own, and the check leaves
// the credential to it.
func TestOrphanCheckRevokesForAPinnedDeletedAccess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	for _, tc := range []struct {
		name       string
		finalizers []string
		want       string
	}{
		{"held by its tenant's finalizer only", []string{"tenant.example/pin"}, whyAccessGone},
		{"buckety's finalizer on", []string{"tenant.example/pin", v1.Finalizer}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRecordedAccess(t, true)
			ctx := context.Background()
			a := pinned(f.a)
			a.Finalizers = tc.finalizers
			// Built with it: the fake client's Create drops a deletion
			// timestamp.
			api, cache := credentialClient(t, f.rec.DeepCopy(), a.DeepCopy()), credentialClient(t, f.rec.DeepCopy(), a.DeepCopy())
			o := &Orphans{Reconciler: &Reconciler{Client: laggingCache{Client: api, cache: cache}, APIReader: api, Backends: f.r.Backends}}
			why, err := o.unwanted(ctx, f.rec, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if why != tc.want {
				t.Errorf("want %q, got %q", tc.want, why)
			}
		})
	}
}
