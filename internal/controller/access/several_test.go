package access

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
)

// severalEnv is a Reconciler on a fake client holding objs, with two
// backends of the in-memory test driver: svc and other.
func severalEnv(t *testing.T, objs ...client.Object) (r *Reconciler, svc, other *drivertest.Backend) {
	t.Helper()
	svc, other = drivertest.NewBackend(), drivertest.NewBackend()
	dir := t.TempDir()
	yaml := "backends:\n- {name: svc, driver: test, config: {endpoint: test://svc}}\n- {name: other, driver: other, config: {endpoint: test://other}}\n"
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := drivers.NewRegistry(&drivertest.Driver{Named: "test", Service: svc}, &drivertest.Driver{Named: "other", Service: other})
	cfg, err := config.Load(dir, config.Options{Registry: reg, Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	set, err := backends.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := credentialClient(t, objs...)
	return &Reconciler{Client: c, APIReader: c, Backends: set}, svc, other
}

// provisioned is Buckety ns/name on backend, its resource provisioned.
func provisioned(ns, name, backend string) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
		Spec: v1.BucketySpec{Backend: backend},
		Status: v1.BucketyStatus{BackendResourceName: ns + "." + name, Conditions: []metav1.Condition{{Type: v1.ConditionProvisioned,
			Status: metav1.ConditionTrue, Reason: v1.ReasonAsExpected, LastTransitionTime: metav1.Now()}}}}
}

// severalGranted is access b/multi over refs, granted on backend svc with
// credential p1 (its record, Active, on svc, returned too).
func severalGranted(refs ...v1.BucketyReference) (*v1.BucketyAccess, *v1.BucketyCredential) {
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "multi", UID: "uid-multi"},
		Spec:   v1.BucketyAccessSpec{BucketyRefs: refs, CredentialsSecretName: "multi"},
		Status: v1.BucketyAccessStatus{Principal: "p1", BucketyGeneration: 1, Backend: "svc"}}
	rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("svc", "p1"), UID: "uid-p1",
		Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
		Spec: v1.BucketyCredentialSpec{Backend: "svc", Service: "svc", Principal: "p1", Serial: 1, Phase: v1.CredentialActive,
			Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
	return a, rec
}

// TestSeveralWithdrawnWhileOnTwoBackends: an access of namespace b over
// b/y, a/x and b/w, granted on backend svc, where w is now on backend
// other (made again there) and a/x no longer shares with b. The access is
// invalid (one access, one backend) and cannot be granted on the rest, so
// it gives up everything, as the reference says: its credential is
// revoked, and status.withdrawn lists a/x, whose deletion no longer waits
// for it. Before, the pass stopped at the backend mismatch: nothing was
// revoked, and a/x's deletion waited for the access for ever. Whichever
// comes first, the mismatch or the one that stopped sharing.
func TestSeveralWithdrawnWhileOnTwoBackends(t *testing.T) {
	y, x, w := v1.BucketyReference{Name: "y"}, v1.BucketyReference{Namespace: "a", Name: "x"}, v1.BucketyReference{Name: "w"}
	for _, tc := range []struct {
		name string
		refs []v1.BucketyReference
	}{
		{"stopped sharing before the mismatch", []v1.BucketyReference{y, x, w}},
		{"stopped sharing after the mismatch", []v1.BucketyReference{y, w, x}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, rec := severalGranted(tc.refs...)
			// x shares with nobody now.
			r, svc, _ := severalEnv(t, provisioned("b", "y", "svc"), provisioned("a", "x", "svc"), provisioned("b", "w", "other"), a.DeepCopy(), rec.DeepCopy())
			ctx := context.Background()
			f := &facts{}
			if _, err := r.reconcileLive(ctx, a, f); err != nil {
				t.Fatal(err)
			}
			if n, got := svc.Calls("revoke"), svc.LastAccess("revoke").Principal; n != 1 || got != "p1" {
				t.Errorf("want credential p1 revoked on svc, got %d revocations (last of %q)", n, got)
			}
			if err := r.Client.Get(ctx, client.ObjectKeyFromObject(rec), &v1.BucketyCredential{}); !apierrors.IsNotFound(err) {
				t.Errorf("want the credential's record deleted, got %v", err)
			}
			if !a.WithdrawnFrom("a", "x") || a.Status.Principal != "" {
				t.Errorf("want a/x in status.withdrawn and no principal, got withdrawn %v, principal %q", a.Status.Withdrawn, a.Status.Principal)
			}
			ready := readiness(a, f).ready
			if ready.Reason != v1.ReasonNotShared || !strings.Contains(ready.Message, "a/x") || !strings.Contains(ready.Message, "backend other") {
				t.Errorf("want Ready %s naming a/x and what holds the rest (backend other), got %s: %s", v1.ReasonNotShared, ready.Reason, ready.Message)
			}
		})
	}
}

// TestKeptCredentialIsNotWithdrawnBeforeItsRevocation: an access over
// b/y and a/x keeps a credential of its own (its backend no longer issues
// them: keepOwn), and a/x stops sharing with it. Nothing narrows that
// credential, so the pass gives up everything (giveUp), and the
// revocation fails. status.withdrawn must not list a/x meanwhile: it lets
// a/x's deletion go on while the credential still works there. Once the
// revocation succeeds, it does.
func TestKeptCredentialIsNotWithdrawnBeforeItsRevocation(t *testing.T) {
	y, x := v1.BucketyReference{Name: "y"}, v1.BucketyReference{Namespace: "a", Name: "x"}
	a, rec := severalGranted(y, x)
	yb := provisioned("b", "y", "svc")
	r, svc, _ := severalEnv(t, yb, provisioned("a", "x", "svc"), a.DeepCopy(), rec.DeepCopy(),
		ownedSecret(a.Namespace, a.Spec.CredentialsSecretName, a.Name, a.UID))
	ctx := context.Background()
	e, _ := r.Backends.Get("svc")
	on := &grantedOn{several: true, targets: []target{{ref: y, b: yb}}, withdrawn: []string{"a/x"}, why: []string{"Buckety a/x does not share"}}
	f := &facts{}
	kept, err := r.keepOwn(ctx, a, e, on, f)
	if err != nil || !kept {
		t.Fatalf("want the credential kept as it is, got %v (%v)", kept, err)
	}
	if a.WithdrawnFrom("a", "x") {
		t.Errorf("kept, not revoked yet: want a/x not in status.withdrawn, got %v", a.Status.Withdrawn)
	}
	svc.FailNext(drivertest.Unavailable())
	if _, err := r.giveUp(ctx, a, on, f, reconcile.Result{}); err == nil {
		t.Fatal("want the failed revocation reported")
	}
	if a.WithdrawnFrom("a", "x") || a.Status.Principal != "p1" {
		t.Errorf("revocation failed: want a/x not in status.withdrawn and principal p1 kept, got withdrawn %v, principal %q", a.Status.Withdrawn, a.Status.Principal)
	}
	// The backend answers again: the next pass withdraws, and says so.
	f = &facts{keptOwn: "p1"}
	if _, err := r.giveUp(ctx, a, on, f, reconcile.Result{}); err != nil {
		t.Fatal(err)
	}
	if !a.WithdrawnFrom("a", "x") || a.Status.Principal != "" {
		t.Errorf("revoked: want a/x in status.withdrawn and no principal, got withdrawn %v, principal %q", a.Status.Withdrawn, a.Status.Principal)
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("revoked: want the access's Secret deleted, got %v", err)
	}
}
