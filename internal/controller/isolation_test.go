package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/access"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
)

// boundCredential records, for access a/reader of grantedAccess, a
// principal granted on Buckety a/orders through its claim.
func boundCredential(e *env, principal string, mutate func(*v1.BucketyCredentialSpec)) {
	e.t.Helper()
	a, _ := e.access("a", "reader")
	b := e.buckety("a", "orders")
	spec := v1.BucketyCredentialSpec{Backend: "svc", Service: "svc", Principal: principal, Serial: 1, Phase: v1.CredentialActive,
		Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}, BucketyUID: string(b.UID), Claim: claims.Name("svc", "orders")}
	if mutate != nil {
		mutate(&spec)
	}
	e.create(&v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: access.CredentialName("svc", principal), Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}}, Spec: spec})
}

// stripAndDelete removes a Buckety as a tenant with edit can: its
// finalizer patched away, then deleted, so no deletion pass runs.
func (e *env) stripAndDelete(ns, name string) {
	e.t.Helper()
	b := e.buckety(ns, name)
	before := b.DeepCopy()
	b.Finalizers = nil
	if err := e.c.Patch(context.Background(), b, client.MergeFrom(before)); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.Delete(context.Background(), b); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &v1.Buckety{}); !apierrors.IsNotFound(err) {
		e.t.Fatalf("want Buckety %s/%s gone, got %v", ns, name, err)
	}
}

// TestOrphansRevokeWhatMustNotWork: the periodic check revokes a
// credential, whatever state its access is in, when the Buckety it was
// granted on is gone, when its claim is gone or owned by another Buckety,
// and when it was rotated out and is past its retireAfter; it keeps a
// credential bound to the live Buckety and claim, and one not bound yet.
func TestOrphansRevokeWhatMustNotWork(t *testing.T) {
	past := metav1.NewTime(time.Now().Add(-time.Minute))
	future := metav1.NewTime(time.Now().Add(time.Hour))
	for _, c := range []struct {
		name    string
		mutate  func(*v1.BucketyCredentialSpec)
		act     func(e *env)
		revoked bool
	}{
		{"bound to the live Buckety and claim", nil, nil, false},
		{"not bound yet (a record from before binding)", func(s *v1.BucketyCredentialSpec) { s.BucketyUID, s.Claim = "", "" }, nil, false},
		{"the Buckety deleted with its finalizer removed", nil, func(e *env) { e.stripAndDelete("a", "orders") }, true},
		{"granted on an earlier Buckety of the same name", func(s *v1.BucketyCredentialSpec) { s.BucketyUID = "an-earlier-uid" }, nil, true},
		{"the claim owned by another Buckety", nil, func(e *env) {
			cl, _ := e.claim("orders")
			before := cl.DeepCopy()
			cl.Spec.Owner = v1.ClaimOwner{Namespace: "b", Name: "thief", UID: "b-thief-uid"}
			if err := e.c.Patch(context.Background(), cl, client.MergeFrom(before)); err != nil {
				e.t.Fatal(err)
			}
		}, true},
		{"the claim gone", func(s *v1.BucketyCredentialSpec) { s.Claim = claims.Name("svc", "elsewhere") }, nil, true},
		{"rotated out, past its retireAfter", func(s *v1.BucketyCredentialSpec) { s.Phase, s.RetireAfter = v1.CredentialRetiring, &past }, nil, true},
		{"rotated out, within its grace", func(s *v1.BucketyCredentialSpec) { s.Phase, s.RetireAfter = v1.CredentialRetiring, &future }, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnvWith(t, "", (&secretDeletes{}).wrap)
			grantedAccess(t, e, "")
			boundCredential(e, "user-a-reader", c.mutate)
			if c.act != nil {
				c.act(e)
			}
			o := &access.Orphans{Reconciler: e.ar}
			n, err := o.CheckOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := e.svc.LastAccess("revoke").Principal == "user-a-reader"
			if got != c.revoked || (n == 1) != c.revoked {
				t.Errorf("want revoked %v, got revoke call %v and %d revoked", c.revoked, got, n)
			}
			var list v1.BucketyCredentialList
			if err := e.c.List(context.Background(), &list); err != nil {
				t.Fatal(err)
			}
			if (len(list.Items) == 0) != c.revoked {
				t.Errorf("want the record deleted %v, got %d records", c.revoked, len(list.Items))
			}
		})
	}
}

// TestAccessWithoutItsBucketyRevokes: the access's own pass revokes its
// credential as soon as its Buckety is gone (finalizer removed by hand),
// without waiting for the periodic check.
func TestAccessWithoutItsBucketyRevokes(t *testing.T) {
	e := newEnvWith(t, "", (&secretDeletes{}).wrap)
	grantedAccess(t, e, "")
	boundCredential(e, "user-a-reader", nil)
	e.stripAndDelete("a", "orders")
	e.reconcileAccess("a", "reader")
	if got := e.svc.LastAccess("revoke").Principal; got != "user-a-reader" {
		t.Errorf("want user-a-reader revoked, got %q", got)
	}
	a, _ := e.access("a", "reader")
	if c := cond(a.Status.Conditions, v1.ConditionReady); c.Reason != v1.ReasonBucketyNotFound {
		t.Errorf("want Ready reason BucketyNotFound, got %s: %s", c.Reason, c.Message)
	}
	var list v1.BucketyCredentialList
	if err := e.c.List(context.Background(), &list); err != nil || len(list.Items) != 0 {
		t.Errorf("want the record deleted, got %d (%v)", len(list.Items), err)
	}
}

// TestAccessLimits: a backend's limits.accessesPerBuckety and
// accessesPerNamespace grant the oldest accesses and hold the others at
// LimitExceeded with no grant and no Secret, naming the limit; a deleted
// access frees its place for the next in line; an access granted once
// keeps its grant when the limit is lowered under it.
func TestAccessLimits(t *testing.T) {
	e := newEnvWith(t, "  limits: {accessesPerBuckety: 2, accessesPerNamespace: 3}\n", (&secretDeletes{}).wrap)
	e.create(newBuckety("a", "orders", "orders"))
	e.create(newBuckety("a", "ledger", "ledger"))
	e.create(newBuckety("b", "other", "other"))
	for _, b := range [][2]string{{"a", "orders"}, {"a", "ledger"}, {"b", "other"}} {
		e.reconcile(b[0], b[1])
	}
	base := time.Now().Add(-time.Hour)
	mk := func(ns, name, buckety string, age int) {
		e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), CreationTimestamp: metav1.NewTime(base.Add(time.Duration(age) * time.Minute))},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: buckety}, CredentialsSecretName: name}})
	}
	// Created in this order; reconciled newest first, as a flood would be.
	mk("a", "o1", "orders", 1)
	mk("a", "o2", "orders", 2)
	mk("a", "o3", "orders", 3)
	mk("a", "l1", "ledger", 4)
	mk("a", "l2", "ledger", 5)
	mk("b", "x1", "other", 6)
	for _, n := range []string{"l2", "l1", "o3", "o2", "o1"} {
		e.reconcileAccess("a", n)
	}
	e.reconcileAccess("b", "x1")
	want := map[string]string{"o1": "", "o2": "", "o3": "limits.accessesPerBuckety: 2", "l1": "", "l2": "limits.accessesPerNamespace: 3"}
	check := func() {
		t.Helper()
		for n, limit := range want {
			a, _ := e.access("a", n)
			c := cond(a.Status.Conditions, v1.ConditionReady)
			_, hasSecret := e.secret("a", n)
			switch {
			case limit == "" && (c.Status != metav1.ConditionTrue || !hasSecret):
				t.Errorf("%s: want granted, got Ready=%s (%s: %s), Secret %v", n, c.Status, c.Reason, c.Message, hasSecret)
			case limit != "" && (c.Reason != v1.ReasonLimitExceeded || !strings.Contains(c.Message, limit) || hasSecret):
				t.Errorf("%s: want LimitExceeded naming %s and no Secret, got %s (%s: %s), Secret %v", n, limit, c.Status, c.Reason, c.Message, hasSecret)
			}
		}
	}
	check()
	if a, _ := e.access("b", "x1"); cond(a.Status.Conditions, v1.ConditionReady).Status != metav1.ConditionTrue {
		t.Errorf("another namespace's access: want granted, got %+v", cond(a.Status.Conditions, v1.ConditionReady))
	}

	// o1 goes: o3 takes its place on orders (3 on the backend: o2, o3, l1),
	// and l2 still waits.
	e.deleteAccess("a", "o1")
	e.reconcileAccess("a", "o1")
	delete(want, "o1")
	want["o3"] = ""
	e.reconcileAccess("a", "o3")
	e.reconcileAccess("a", "l2")
	check()
}
