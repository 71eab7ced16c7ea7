package buckety

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestAccessKeptByAnotherFinalizerHoldsNothing: a Buckety being deleted
// waits for the accesses that use it, its own namespace's and the
// namespaces it shares with. An access being deleted whose revocation is
// done (buckety's finalizer gone) but which another finalizer keeps (a
// consumer's own, x.example/pin) holds nothing: it must not keep the
// owner's deletion, and the owner's namespace, waiting for ever. One still
// carrying buckety's finalizer, and a live one, still hold it back.
func TestAccessKeptByAnotherFinalizerHoldsNothing(t *testing.T) {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders"},
		Spec:   v1.BucketySpec{Backend: "kafka", Sharing: []v1.SharingRule{{Namespace: "consumer", Roles: []v1.Role{v1.RoleReadWrite}}}},
		Status: v1.BucketyStatus{Backend: "kafka"}}
	now := metav1.Now()
	access := func(ns, name string, deleting bool, finalizers ...string) v1.BucketyAccess {
		a := v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Finalizers: finalizers},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: name}}
		if ns != b.Namespace {
			a.Spec.BucketyRef.Namespace = b.Namespace
		}
		if deleting {
			a.DeletionTimestamp = &now
		}
		return a
	}
	accesses := []v1.BucketyAccess{
		access("consumer", "pinned", true, "x.example/pin"),
		access("payments", "pinned", true, "x.example/pin"),
		access("consumer", "revoking", true, "x.example/pin", v1.Finalizer),
		access("consumer", "live", false, v1.Finalizer),
		access("payments", "live", false, v1.Finalizer),
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	r := &Reconciler{Backends: testSet(t), Client: fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ns).Build()}
	held, f, err := heldBackOn(r, b, accesses)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"consumer/revoking", "consumer/live", "live"}
	if !held || !slices.Equal(f.blockedBy, want) {
		t.Errorf("want the deletion held back by %v, got held %v by %v", want, held, f.blockedBy)
	}
	held, f, err = heldBackOn(r, b, accesses[:2])
	if err != nil || held || len(f.blockedBy) != 0 {
		t.Errorf("only accesses kept by another's finalizer: want the deletion to go on, got held %v by %v (%v)", held, f.blockedBy, err)
	}
}

// TestImplicitAccessKeptByAnotherFinalizerHoldsNothing: the implicit
// access, as an explicit one, being deleted with buckety's part done
// (its finalizer gone) but kept by someone else's finalizer (a tenant's,
// a policy tool's) does not keep the Buckety's deletion waiting for ever;
// one still carrying buckety's finalizer does.
func TestImplicitAccessKeptByAnotherFinalizerHoldsNothing(t *testing.T) {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders", UID: "uid-orders"}}
	now := metav1.Now()
	implicit := func(finalizers ...string) v1.BucketyAccess {
		yes := true
		return v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders", Finalizers: finalizers, DeletionTimestamp: &now,
			Labels:          map[string]string{v1.ImplicitLabel: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "Buckety", Name: "orders", UID: "uid-orders", Controller: &yes}}},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "creds"}}
	}
	r := &Reconciler{}
	held, f, err := heldBackOn(r, b, []v1.BucketyAccess{implicit("x.example/pin")})
	if err != nil || held || f.waitingImplicit {
		t.Errorf("implicit access kept only by another's finalizer: want the deletion to go on, got held %v, waiting for it %v (%v)", held, f.waitingImplicit, err)
	}
	held, f, err = heldBackOn(r, b, []v1.BucketyAccess{implicit("x.example/pin", v1.Finalizer)})
	if err != nil || !held || !f.waitingImplicit {
		t.Errorf("implicit access still revoking: want the deletion to wait for it, got held %v, waiting for it %v (%v)", held, f.waitingImplicit, err)
	}
}

// TestWithdrawnAccessChangedSince: Buckety payments/orders, being deleted,
// shares ReadOnly with namespace consumer. Consumer's accesses were
// withdrawn (NotShared, nothing held; never Ready since, so their
// status.observedGeneration stays behind). One whose spec changed to the
// role the Buckety shares, which its pass has not seen yet (its Ready
// condition is for an earlier generation), holds the deletion back, as a
// shared access does: that pass would grant it. One whose change leaves it
// unshared (spec.rotation, or a role still not shared) does not, however
// often it changes; nor one whose pass has seen its change; nor any while
// the owner's namespace is being deleted (it shares nothing then).
func TestWithdrawnAccessChangedSince(t *testing.T) {
	set := testSet(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders"},
		Spec:   v1.BucketySpec{Backend: "kafka", Sharing: []v1.SharingRule{{Namespace: "consumer", Roles: []v1.Role{v1.RoleReadOnly}}}},
		Status: v1.BucketyStatus{Backend: "kafka"}}
	withdrawn := func(name string, role v1.Role, generation, readyFor int64) v1.BucketyAccess {
		a := v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "consumer", Name: name, Generation: generation, Finalizers: []string{v1.Finalizer}},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "payments", Name: "orders"}, Role: role, CredentialsSecretName: name}}
		a.Status.ObservedGeneration = 1
		a.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonNotShared, ObservedGeneration: readyFor}}
		return a
	}
	accesses := []v1.BucketyAccess{
		withdrawn("shared-role-now", v1.RoleReadOnly, 3, 2),
		withdrawn("rotated", v1.RoleReadWrite, 9, 2),
		withdrawn("seen", v1.RoleReadOnly, 3, 3),
	}
	for _, c := range []struct {
		name  string
		phase corev1.NamespacePhase
		want  []string
	}{
		{"the owner's namespace active", corev1.NamespaceActive, []string{"consumer/shared-role-now"}},
		{"the owner's namespace being deleted", corev1.NamespaceTerminating, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments"}, Status: corev1.NamespaceStatus{Phase: c.phase}}
			r := &Reconciler{Backends: set, Client: fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ns).Build()}
			held, f, err := heldBackOn(r, b, accesses)
			if err != nil {
				t.Fatal(err)
			}
			if held != (len(c.want) > 0) || !slices.Equal(f.blockedBy, c.want) {
				t.Errorf("want the deletion held back by %v, got held %v by %v", c.want, held, f.blockedBy)
			}
		})
	}
}

// heldBackOn is r.heldBack for Buckety b with the accesses listed, and
// the facts it recorded.
func heldBackOn(r *Reconciler, b *v1.Buckety, accesses []v1.BucketyAccess) (bool, *facts, error) {
	f := &facts{}
	held, err := r.heldBack(context.Background(), b, func(context.Context, *v1.Buckety) ([]v1.BucketyAccess, error) {
		return accesses, nil
	}, f)
	return held, f, err
}

// TestUnsharedAccessWhoseStatusSaysNothingHoldsByItsRecords: Buckety
// payments/orders, being deleted, no longer shares with namespace
// consumer, whose accesses' statuses do not show them withdrawn (a
// tenant can keep that status write from ever succeeding, its access
// grown by metadata-only patches). Each holds the deletion back only
// while a credential record of it is bound to orders (its revocation not
// done; a record from before credentials were bound may be orders'):
// one with no record, or with a record bound to another Buckety, holds
// nothing. Trusting the status, consumer kept the owner's deletion, and
// its namespace's, waiting for ever.
func TestUnsharedAccessWhoseStatusSaysNothingHoldsByItsRecords(t *testing.T) {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders", UID: "uid-orders"},
		Spec: v1.BucketySpec{Backend: "kafka"}, Status: v1.BucketyStatus{Backend: "kafka"}}
	access := func(name string) v1.BucketyAccess {
		return v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "consumer", Name: name, UID: types.UID("uid-" + name), Finalizers: []string{v1.Finalizer}},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "payments", Name: "orders"}, CredentialsSecretName: name}}
	}
	record := func(owner, bucketyUID string, resources ...string) *v1.BucketyCredential {
		c := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: "cred-" + owner + "-" + bucketyUID, Labels: map[string]string{v1.ClaimOwnerLabel: "uid-" + owner}},
			Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: "p-" + owner, Serial: 1, Phase: v1.CredentialActive, BucketyUID: bucketyUID,
				Owner: v1.ClaimOwner{Namespace: "consumer", Name: owner, UID: "uid-" + owner}}}
		for _, uid := range resources {
			c.Spec.Resources = append(c.Spec.Resources, v1.CredentialResource{Resource: "r", Buckety: "x/y", BucketyUID: uid, Claim: "c"})
		}
		return c
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payments"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ns,
		record("revoking", "uid-orders"),
		record("several", "uid-first", "uid-first", "uid-orders"),
		record("legacy", ""),
		record("elsewhere", "uid-other"),
	).Build()
	r := &Reconciler{Backends: testSet(t), Client: c, APIReader: c}
	held, f, err := heldBackOn(r, b, []v1.BucketyAccess{access("revoked"), access("revoking"), access("several"), access("legacy"), access("elsewhere")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"consumer/revoking", "consumer/several", "consumer/legacy"}
	if !held || !slices.Equal(f.blockedBy, want) {
		t.Errorf("want the deletion held back by %v, got held %v by %v", want, held, f.blockedBy)
	}
}
