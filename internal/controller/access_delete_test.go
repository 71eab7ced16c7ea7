package controller_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/access"
)

// secretDeletes records the Secret deletes the controller makes, with the
// UID precondition each carried, on a fake client that gives created
// objects a UID as the API server does (the fake client leaves it empty,
// which would make any UID precondition match).
type secretDeletes struct {
	mu    sync.Mutex
	calls []secretDelete
	uids  atomic.Int64
}

type secretDelete struct {
	name string
	uid  *types.UID
}

func (d *secretDeletes) wrap(c client.WithWatch) (client.Client, client.Reader) {
	wc := interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetUID() == "" {
				obj.SetUID(types.UID(fmt.Sprintf("uid-%d", d.uids.Add(1))))
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			_, full := obj.(*corev1.Secret)
			if m, ok := obj.(*metav1.PartialObjectMetadata); full || ok && m.Kind == "Secret" {
				var o client.DeleteOptions
				o.ApplyOptions(opts)
				call := secretDelete{name: obj.GetName()}
				if o.Preconditions != nil {
					call.uid = o.Preconditions.UID
				}
				d.mu.Lock()
				d.calls = append(d.calls, call)
				d.mu.Unlock()
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	return wc, wc
}

func (e *env) access(ns, name string) (*v1.BucketyAccess, bool) {
	e.t.Helper()
	a := &v1.BucketyAccess{}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, a)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return a, true
}

func (e *env) secret(ns, name string) (*corev1.Secret, bool) {
	e.t.Helper()
	s := &corev1.Secret{}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return s, true
}

// grantedAccess provisions Buckety a/orders and an access a/reader writing
// Secret reader-creds, and records for the access the principal a driver
// that issues one per access would have issued (a BucketyCredential).
func grantedAccess(t *testing.T, e *env, principal string) *corev1.Secret {
	t.Helper()
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "reader", UID: "reader-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "reader-creds"}})
	e.reconcileAccess("a", "reader")
	s, ok := e.secret("a", "reader-creds")
	if !ok || s.UID == "" {
		t.Fatalf("want the access's Secret written, with a UID, got %v", s)
	}
	a, _ := e.access("a", "reader")
	if principal != "" {
		// The record an issue of a per-access credential leaves (credential.go).
		e.create(&v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: access.CredentialName("svc", principal), Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
			Spec: v1.BucketyCredentialSpec{Backend: "svc", Service: "svc", Principal: principal, Serial: 1, Phase: v1.CredentialActive,
				Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}})
	}
	return s
}

func (e *env) deleteAccess(ns, name string) {
	e.t.Helper()
	a, ok := e.access(ns, name)
	if !ok {
		e.t.Fatalf("access %s/%s does not exist", ns, name)
	}
	if err := e.c.Delete(context.Background(), a); err != nil {
		e.t.Fatal(err)
	}
}

// TestAccessDeletionRevokesAndDeletesItsSecret: deleting an access whose
// grant issued a principal revokes it on the backend, deletes the access's
// own Secret with a UID precondition (so a Secret re-created under the name
// meanwhile is not deleted on the strength of the old one's read), and
// releases the finalizer.
func TestAccessDeletionRevokesAndDeletesItsSecret(t *testing.T) {
	d := &secretDeletes{}
	e := newEnvWith(t, "", d.wrap)
	s := grantedAccess(t, e, "user-a-reader")
	e.deleteAccess("a", "reader")
	e.reconcileAccess("a", "reader")
	if n := e.svc.Calls("revoke"); n != 1 {
		t.Errorf("want the principal revoked once, got %d revokes", n)
	}
	if _, ok := e.secret("a", "reader-creds"); ok {
		t.Error("want the access's Secret deleted")
	}
	if len(d.calls) != 1 || d.calls[0].name != "reader-creds" || d.calls[0].uid == nil || *d.calls[0].uid != s.UID {
		t.Errorf("want one delete of Secret reader-creds with UID precondition %s, got %+v", s.UID, d.calls)
	}
	if _, ok := e.access("a", "reader"); ok {
		t.Error("want the finalizer released and the access gone")
	}
}

// TestAccessDeletionWithoutPrincipalRevokesNothing: an access whose grant
// issued nothing (status.principal empty: the backend's shared
// credentials) has nothing to revoke.
func TestAccessDeletionWithoutPrincipalRevokesNothing(t *testing.T) {
	e := newEnvWith(t, "", (&secretDeletes{}).wrap)
	grantedAccess(t, e, "")
	e.deleteAccess("a", "reader")
	e.reconcileAccess("a", "reader")
	if n := e.svc.Calls("revoke"); n != 0 {
		t.Errorf("want no revoke without a principal, got %d", n)
	}
	if _, ok := e.access("a", "reader"); ok {
		t.Error("want the access gone")
	}
}

// TestAccessDeletionNeverDeletesAForeignSecret: a Secret of the access's
// credentials name that is not the access's own (created by someone else,
// or by buckety for another access) survives the access's deletion, and
// the deletion still completes.
func TestAccessDeletionNeverDeletesAForeignSecret(t *testing.T) {
	for _, c := range []struct {
		name   string
		secret func(other *v1.BucketyAccess, s *runtime.Scheme) (*corev1.Secret, error)
	}{
		{"not buckety's", func(*v1.BucketyAccess, *runtime.Scheme) (*corev1.Secret, error) {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "taken"}, Data: map[string][]byte{"mine": []byte("keep")}}, nil
		}},
		{"another access's", func(other *v1.BucketyAccess, scheme *runtime.Scheme) (*corev1.Secret, error) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "taken",
				Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: other.Name}}, Data: map[string][]byte{"mine": []byte("keep")}}
			return s, controllerutil.SetControllerReference(other, s, scheme)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &secretDeletes{}
			e := newEnvWith(t, "", d.wrap)
			e.create(newBuckety("a", "orders", "orders"))
			e.reconcile("a", "orders")
			other := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "other", UID: "other-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "taken"}}
			s, err := c.secret(other, e.c.Scheme())
			if err != nil {
				t.Fatal(err)
			}
			e.create(s)
			foreign, _ := e.secret("a", "taken")
			e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "reader", UID: "reader-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "taken"}})
			e.reconcileAccess("a", "reader")
			if a, _ := e.access("a", "reader"); cond(a.Status.Conditions, v1.ConditionReady).Reason != v1.ReasonSecretConflict || !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
				t.Fatalf("want the access in SecretConflict with its finalizer, got %+v", a.Status.Conditions)
			}
			e.deleteAccess("a", "reader")
			e.reconcileAccess("a", "reader")
			s, ok := e.secret("a", "taken")
			if !ok || s.UID != foreign.UID || string(s.Data["mine"]) != "keep" || len(s.Data) != 1 {
				t.Errorf("want the foreign Secret untouched, got %v", s)
			}
			if len(d.calls) != 0 {
				t.Errorf("want no Secret delete, got %+v", d.calls)
			}
			if _, ok := e.access("a", "reader"); ok {
				t.Error("want the access gone")
			}
		})
	}
}

// TestAccessRevokeFailureKeepsTheFinalizer: while revoking fails, the
// access keeps its finalizer and its Secret (deleting them would lose
// track of credentials still valid on the backend); the next pass that
// revokes completes the deletion.
func TestAccessRevokeFailureKeepsTheFinalizer(t *testing.T) {
	d := &secretDeletes{}
	e := newEnvWith(t, "", d.wrap)
	grantedAccess(t, e, "user-a-reader")
	e.deleteAccess("a", "reader")
	e.svc.FailNext(drivertest.Unavailable())
	if _, err := e.ar.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "reader"}}); err == nil {
		t.Error("want the failed revoke returned as an error, so the deletion is retried")
	}
	a, ok := e.access("a", "reader")
	if !ok || !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
		t.Fatalf("want the access kept with its finalizer after a failed revoke, got %v", a)
	}
	if c := cond(a.Status.Conditions, v1.ConditionBackendUnavailable); c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonBackendUnreachable {
		t.Errorf("want BackendUnavailable=True (BackendUnreachable) after the failed revoke, got %s (%s)", c.Status, c.Reason)
	}
	if _, ok := e.secret("a", "reader-creds"); !ok || len(d.calls) != 0 {
		t.Errorf("want the Secret kept while the revoke fails, got it deleted (%+v)", d.calls)
	}
	e.reconcileAccess("a", "reader")
	if n := e.svc.Calls("revoke"); n != 2 {
		t.Errorf("want the revoke retried, got %d revokes", n)
	}
	if _, ok := e.access("a", "reader"); ok {
		t.Error("want the access gone once the revoke succeeded")
	}
	if _, ok := e.secret("a", "reader-creds"); ok {
		t.Error("want the Secret deleted once the revoke succeeded")
	}
}
