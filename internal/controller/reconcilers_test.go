// Package controller_test tests both reconcilers in seconds, without an API
// server: controller-runtime's fake client and the test driver's in-memory
// service. The integration tests (test/integration) prove the same paths on
// a real API server, broker and S3 servers; these cover the many branches
// that need neither.
package controller_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/access"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// env is one fake cluster with one backend, "svc", on the in-memory service.
type env struct {
	t       *testing.T
	rec     *events.FakeRecorder
	c       client.Client
	svc     *drivertest.Backend
	br      *buckety.Reconciler
	ar      *access.Reconciler
	backoff *retry.Backoff
}

type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, f client.IndexerFunc) error {
	i.b.WithIndex(obj, field, f)
	return nil
}

func newEnv(t *testing.T, configExtra string) *env {
	t.Helper()
	return newEnvWith(t, configExtra, nil)
}

// newEnvWith is newEnv with the fake client wrapped by wrap (nil: not
// wrapped), and the uncached reader, when given, in place of the client.
func newEnvWith(t *testing.T, configExtra string, wrap func(client.WithWatch) (client.Client, client.Reader)) *env {
	t.Helper()
	return newEnvDriver(t, configExtra, wrap, &drivertest.Driver{})
}

// newEnvDriver is newEnvWith with the test driver d (its Service is set
// here).
func newEnvDriver(t *testing.T, configExtra string, wrap func(client.WithWatch) (client.Client, client.Reader), d *drivertest.Driver) *env {
	t.Helper()
	s, err := objects.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.Buckety{}, &v1.BucketyAccess{}, &v1.BucketyClaim{})
	if err := objects.SetupIndexes(context.Background(), builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	var c client.Client = b.Build()
	var apiReader client.Reader = c
	held := &buckety.Held{}
	if wrap != nil {
		c, apiReader = wrap(c.(client.WithWatch))
	}
	svc := drivertest.NewBackend()
	dir := t.TempDir()
	yaml := "backends:\n- name: svc\n  driver: test\n  config: {endpoint: test://service}\n" + configExtra
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Service = svc
	cfg, err := config.Load(dir, config.Options{Registry: drivers.NewRegistry(d), Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	set, err := backends.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := &claims.Store{Client: c, APIReader: apiReader}
	bo := &retry.Backoff{}
	rec := events.NewFakeRecorder(1000)
	return &env{t: t, c: c, svc: svc, backoff: bo, rec: rec,
		br: &buckety.Reconciler{Client: c, APIReader: apiReader, Backends: set, Claims: store, Recheck: time.Hour, Backoff: bo, Recorder: rec, Waiters: &retry.Waiters{}, Held: held},
		ar: &access.Reconciler{Client: c, APIReader: apiReader, Backends: set, Claims: store, Recheck: time.Hour, Backoff: bo, Held: held},
	}
}

// events drains the events recorded so far, as "Type Reason note" lines.
func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	if err := e.c.Create(context.Background(), obj); err != nil {
		e.t.Fatal(err)
	}
}

// reconcile runs the Buckety reconciler once.
func (e *env) reconcile(ns, name string) reconcile.Result {
	e.t.Helper()
	res, err := e.br.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	if err != nil {
		e.t.Fatalf("reconcile %s/%s: %v", ns, name, err)
	}
	return res
}

func (e *env) reconcileAccess(ns, name string) reconcile.Result {
	e.t.Helper()
	res, err := e.ar.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	if err != nil {
		e.t.Fatalf("reconcile access %s/%s: %v", ns, name, err)
	}
	return res
}

func (e *env) buckety(ns, name string) *v1.Buckety {
	e.t.Helper()
	b := &v1.Buckety{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		e.t.Fatal(err)
	}
	return b
}

func (e *env) claim(resource string) (*v1.BucketyClaim, bool) {
	cl := &v1.BucketyClaim{}
	err := e.c.Get(context.Background(), types.NamespacedName{Name: claims.Name("svc", resource)}, cl)
	return cl, err == nil
}

func cond(conds []metav1.Condition, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func (e *env) wantReady(b *v1.Buckety, status metav1.ConditionStatus, reason string) metav1.Condition {
	e.t.Helper()
	c := cond(b.Status.Conditions, v1.ConditionReady)
	if c.Status != status || c.Reason != reason {
		e.t.Errorf("%s: want Ready=%s (%s), got %s (%s: %s)", b.Name, status, reason, c.Status, c.Reason, c.Message)
	}
	return c
}

// newBuckety builds a Buckety with a UID, as the API server would give it
// (the fake client leaves UIDs empty, which would make every Buckety the
// owner of every claim).
func newBuckety(ns, name, resource string) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name + "-uid")}, Spec: v1.BucketySpec{Backend: "svc", Name: resource}}
}

// deleteAndReconcile deletes a Buckety and reconciles until it is gone.
func (e *env) deleteAndReconcile(ns, name string) {
	e.t.Helper()
	if err := e.c.Delete(context.Background(), e.buckety(ns, name)); err != nil {
		e.t.Fatal(err)
	}
	for range 5 {
		e.reconcile(ns, name)
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &v1.Buckety{}); apierrors.IsNotFound(err) {
			return
		}
	}
	e.t.Fatalf("%s/%s not gone after deletion", ns, name)
}

func TestProvisionStampsFromTheClaim(t *testing.T) {
	e := newEnv(t, "")
	e.create(newBuckety("a", "orders", "orders"))
	res := e.reconcile("a", "orders")
	b := e.buckety("a", "orders")
	e.wantReady(b, metav1.ConditionTrue, v1.ReasonReconciled)
	if b.Status.Provenance != v1.ProvenanceCreated || b.Status.BackendResourceName != "orders" {
		t.Errorf("want Created orders, got %s %s", b.Status.Provenance, b.Status.BackendResourceName)
	}
	if cl, ok := e.claim("orders"); !ok || cl.Spec.Phase != v1.ClaimCreated || cl.Spec.Owner.UID != string(b.UID) {
		t.Errorf("want a Created claim owned by the Buckety, got %+v", cl)
	}
	if res.RequeueAfter < 50*time.Minute {
		t.Errorf("want the next pass at the re-check interval, got %s", res.RequeueAfter)
	}
	// A hand-edited status is put back from the claim.
	before := b.DeepCopy()
	b.Status.BackendResourceName, b.Status.Provenance = "someone-elses", v1.ProvenanceAdopted
	if err := e.c.Status().Patch(context.Background(), b, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	e.reconcile("a", "orders")
	if b = e.buckety("a", "orders"); b.Status.BackendResourceName != "orders" || b.Status.Provenance != v1.ProvenanceCreated {
		t.Errorf("want the status rewritten from the claim, got %s %s", b.Status.BackendResourceName, b.Status.Provenance)
	}
}

// TestNameConflictTellsOnlyWhatTheTenantMayKnow: a Buckety that finds its
// resource owned by a Buckety of another namespace is told that another
// Buckety owns it, never which (tenants could enumerate each other's
// names); an owner in its own namespace is named.
func TestNameConflictTellsOnlyWhatTheTenantMayKnow(t *testing.T) {
	e := newEnv(t, "")
	e.create(newBuckety("a", "orders", "orders"))
	e.create(newBuckety("b", "orders", "orders"))
	e.create(newBuckety("a", "second", "orders"))
	e.reconcile("a", "orders")
	res := e.reconcile("b", "orders")
	c := e.wantReady(e.buckety("b", "orders"), metav1.ConditionFalse, v1.ReasonNameConflict)
	if strings.Contains(c.Message, "a/orders") || !strings.Contains(c.Message, "owned by another Buckety") {
		t.Errorf("want the owner in another namespace not named, got %q", c.Message)
	}
	for _, ev := range e.events() {
		if strings.Contains(ev, "a/orders") {
			t.Errorf("want no event naming the owner in another namespace, got %q", ev)
		}
	}
	if res.RequeueAfter != retry.PermanentBase {
		t.Errorf("want a conflict retried on the permanent backoff (%s), got %s", retry.PermanentBase, res.RequeueAfter)
	}
	e.reconcile("a", "second")
	if c := e.wantReady(e.buckety("a", "second"), metav1.ConditionFalse, v1.ReasonNameConflict); !strings.Contains(c.Message, "owned by Buckety a/orders") {
		t.Errorf("want the owner in the same namespace named, got %q", c.Message)
	}
	// The owner goes: the name is free, and the waiting Buckety takes it.
	e.deleteAndReconcile("a", "orders")
	e.reconcile("b", "orders")
	e.wantReady(e.buckety("b", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
}

func TestStaleClaimIsTakenOver(t *testing.T) {
	e := newEnv(t, "")
	e.create(&v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("svc", "orders")},
		Spec: v1.BucketyClaimSpec{Backend: "svc", ResourceName: "orders", Phase: v1.ClaimCreated, Owner: v1.ClaimOwner{Namespace: "gone", Name: "ghost", UID: "nope"}}})
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
}

func TestAdoption(t *testing.T) {
	e := newEnv(t, "")
	e.svc.Put("full", 3)
	e.svc.Put("empty", 0)
	e.create(newBuckety("a", "full", "full"))
	e.create(newBuckety("a", "empty", "empty"))
	res := e.reconcile("a", "full")
	b := e.buckety("a", "full")
	c := e.wantReady(b, metav1.ConditionFalse, v1.ReasonAdoptionRefused)
	if !strings.Contains(c.Message, "already exists and holds content") || b.Status.Provenance != "" {
		t.Errorf("want the content reported and nothing stamped, got %q, provenance %q", c.Message, b.Status.Provenance)
	}
	if strings.Contains(c.Message, "3 records") {
		t.Errorf("want the driver's detail of a resource the tenant does not own kept out of the status, got %q", c.Message)
	}
	if _, held := e.claim("full"); held {
		t.Error("want the claim of a refused adoption released")
	}
	if res.RequeueAfter != retry.PermanentBase {
		t.Errorf("want a refusal retried on the permanent backoff, got %s", res.RequeueAfter)
	}
	// Empty, but made outside buckety (no owner record, no claim): refused
	// as well, and nothing written to it.
	e.reconcile("a", "empty")
	b = e.buckety("a", "empty")
	c = e.wantReady(b, metav1.ConditionFalse, v1.ReasonAdoptionRefused)
	if !strings.Contains(c.Message, "made outside buckety") || !strings.Contains(c.Message, "choose another spec.name") || strings.Contains(c.Message, "empty it") || b.Status.Provenance != "" {
		t.Errorf("want the empty resource refused as made outside buckety, with nothing stamped, got %q, provenance %q", c.Message, b.Status.Provenance)
	}
	if _, held := e.claim("empty"); held {
		t.Error("want the claim of a refused empty resource released")
	}
	if n := e.svc.Calls("write"); n != 0 {
		t.Errorf("want nothing written to the refused resources, got %d writes", n)
	}
}

// TestAppearingBetweenInspectAndEnsureIsAdopted: a resource someone else
// creates between the adoption check and the create is never written to
// in that pass (Ensure is CreateOnly), and is then judged like any
// existing resource: made outside buckety, it is refused without both
// adoption keys (and its claim released), and with them Adopted once it
// matches, never Created.
func TestAppearingBetweenInspectAndEnsureIsAdopted(t *testing.T) {
	for _, c := range []struct {
		name, config string
		adoption     v1.Adoption
	}{
		{"default", "", ""},
		{"both keys", "  adoption: {allow: true}\n", v1.AdoptionAdopt},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.config)
			e.svc.BeforeEnsure = func(name string) {
				if _, ok := e.svc.Get(name); !ok {
					e.svc.Put(name, 0)
				}
			}
			b := newBuckety("a", "sneaky", "sneaky")
			b.Spec.Adoption = c.adoption
			e.create(b)
			e.reconcile("a", "sneaky")
			if n := e.svc.Calls("write"); n != 0 {
				t.Errorf("want nothing written to a resource someone else created, got %d writes", n)
			}
			if cl, _ := e.claim("sneaky"); cl.Spec.Phase != v1.ClaimAdopting {
				t.Errorf("want the claim Adopting after the create found it there, got %s", cl.Spec.Phase)
			}
			e.reconcile("a", "sneaky")
			got := e.buckety("a", "sneaky")
			if c.adoption == "" {
				if r := e.wantReady(got, metav1.ConditionFalse, v1.ReasonAdoptionRefused); !strings.Contains(r.Message, "made outside buckety") || got.Status.Provenance != "" {
					t.Errorf("want it refused as made outside buckety, got %q, provenance %q", r.Message, got.Status.Provenance)
				}
				if _, held := e.claim("sneaky"); held {
					t.Error("want the claim released")
				}
				return
			}
			if got.Status.Provenance != v1.ProvenanceAdopted {
				t.Errorf("want Adopted, got %q", got.Status.Provenance)
			}
		})
	}
}

func TestCreatingClaimResumesAsCreated(t *testing.T) {
	e := newEnv(t, "")
	b := newBuckety("a", "crashed", "crashed")
	e.create(b)
	b = e.buckety("a", "crashed")
	// What a crash right after the create leaves: the intent recorded, the
	// resource there, no status.
	e.create(&v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("svc", "crashed"), Labels: map[string]string{v1.ClaimOwnerLabel: string(b.UID)}},
		Spec: v1.BucketyClaimSpec{Backend: "svc", ResourceName: "crashed", Phase: v1.ClaimCreating, Owner: v1.ClaimOwner{Namespace: "a", Name: "crashed", UID: string(b.UID)}}})
	e.svc.Put("crashed", 0)
	e.reconcile("a", "crashed")
	if b = e.buckety("a", "crashed"); b.Status.Provenance != v1.ProvenanceCreated {
		t.Errorf("want Created after the crash, got %q", b.Status.Provenance)
	}
	if e.svc.Calls("inspect") != 0 {
		t.Error("want no second adoption check once the intent to create is recorded")
	}
}

func TestTransientFailuresBackOff(t *testing.T) {
	e := newEnv(t, "")
	e.create(newBuckety("a", "flaky", "flaky"))
	e.svc.FailNext(drivertest.Unavailable(), drivertest.Unavailable(), drivertest.Unavailable())
	var delays []time.Duration
	for range 3 {
		delays = append(delays, e.reconcile("a", "flaky").RequeueAfter)
		e.wantReady(e.buckety("a", "flaky"), metav1.ConditionFalse, v1.ReasonBackendUnreachable)
	}
	if delays[0] != time.Second || delays[1] != 2*time.Second || delays[2] != 4*time.Second {
		t.Errorf("want 1s, 2s, 4s, got %v", delays)
	}
	e.reconcile("a", "flaky")
	e.wantReady(e.buckety("a", "flaky"), metav1.ConditionTrue, v1.ReasonReconciled)
	e.svc.FailNext(errors.New("INVALID_CONFIG"))
	if d := e.reconcile("a", "flaky").RequeueAfter; d != time.Second {
		t.Errorf("want the backoff reset by the success, got %s", d)
	}
	e.wantReady(e.buckety("a", "flaky"), metav1.ConditionFalse, v1.ReasonBackendError)
}

func TestHungBackendTimesOut(t *testing.T) {
	e := newEnv(t, "")
	e.create(newBuckety("a", "hung", "hung"))
	e.svc.Hang(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.br.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "hung"}}); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	e.svc.Hang(false)
	e.reconcile("a", "hung")
	e.wantReady(e.buckety("a", "hung"), metav1.ConditionTrue, v1.ReasonReconciled)
}

func TestShortfallIsNotReady(t *testing.T) {
	e := newEnv(t, "")
	e.svc.Shortfalls = []drivers.Shortfall{{Parameter: "size", Message: "NotImplemented"}}
	e.create(newBuckety("a", "short", "short"))
	e.reconcile("a", "short")
	b := e.buckety("a", "short")
	e.wantReady(b, metav1.ConditionFalse, v1.ReasonParameterNotApplied)
	if c := cond(b.Status.Conditions, v1.ConditionDegraded); c.Status != metav1.ConditionTrue {
		t.Errorf("want Degraded=True, got %s", c.Status)
	}
}

func TestDeletion(t *testing.T) {
	e := newEnv(t, "  adoption: {allow: true}\n")
	for _, c := range []struct {
		name      string
		retention v1.RetentionPolicy
		existing  bool
		wantGone  bool
	}{
		{"created-delete", v1.RetentionDelete, false, true},
		{"created-retain", v1.RetentionRetain, false, false},
		{"adopted-delete", v1.RetentionDelete, true, false},
	} {
		if c.existing {
			e.svc.Put(c.name, 0)
		}
		b := newBuckety("a", c.name, c.name)
		b.Spec.RetentionPolicy = c.retention
		if c.existing {
			b.Spec.Adoption = v1.AdoptionAdopt
		}
		e.create(b)
		e.reconcile("a", c.name)
		if c.existing {
			if b := e.buckety("a", c.name); b.Status.Provenance != v1.ProvenanceAdopted {
				t.Fatalf("%s: want it Adopted, got %q", c.name, b.Status.Provenance)
			}
		}
		e.deleteAndReconcile("a", c.name)
		if _, exists := e.svc.Get(c.name); exists == c.wantGone {
			t.Errorf("%s: want the resource gone=%v, exists=%v", c.name, c.wantGone, exists)
		}
		// A resource left on the backend keeps its claim, retained, so it
		// keeps counting against the namespace (issue 50, 3).
		if cl, held := e.claim(c.name); held != !c.wantGone || (held && !claims.IsRetained(cl)) {
			t.Errorf("%s: want the claim released=%v (else retained), got held=%v %+v", c.name, c.wantGone, held, cl.Spec)
		}
	}
}

func TestDeletionTrustsOnlyTheClaim(t *testing.T) {
	e := newEnv(t, "")
	e.create(newBuckety("victim", "precious", "precious"))
	e.reconcile("victim", "precious")
	b := newBuckety("attacker", "mine", "mine")
	b.Spec.RetentionPolicy = v1.RetentionDelete
	e.create(b)
	e.reconcile("attacker", "mine")
	b = e.buckety("attacker", "mine")
	before := b.DeepCopy()
	b.Status.BackendResourceName, b.Status.Provenance = "precious", v1.ProvenanceCreated
	if err := e.c.Status().Patch(context.Background(), b, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	e.deleteAndReconcile("attacker", "mine")
	if _, ok := e.svc.Get("precious"); !ok {
		t.Error("the victim's resource was deleted through a forged status")
	}
	if _, ok := e.svc.Get("mine"); ok {
		t.Error("want the attacker's own resource deleted")
	}
}

func TestDeletionRechecksTheNamePolicy(t *testing.T) {
	e := newEnv(t, "  namePolicy: {prefix: \"$${namespace}.\"}\n")
	b := newBuckety("team", "x", "team.x")
	b.Spec.RetentionPolicy = v1.RetentionDelete
	e.create(b)
	e.reconcile("team", "x")
	b = e.buckety("team", "x")
	// A claim on a name outside the namespace's prefix (as a maintainer
	// might have made by hand, or a policy that changed since).
	e.create(&v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("svc", "other.x"), Labels: map[string]string{v1.ClaimOwnerLabel: string(b.UID)}},
		Spec: v1.BucketyClaimSpec{Backend: "svc", ResourceName: "other.x", Phase: v1.ClaimCreated, Owner: v1.ClaimOwner{Namespace: "team", Name: "x", UID: string(b.UID)}}})
	e.svc.Put("other.x", 1)
	e.deleteAndReconcile("team", "x")
	if _, ok := e.svc.Get("other.x"); !ok {
		t.Error("want a name outside the namespace's policy never deleted")
	}
	if _, ok := e.svc.Get("team.x"); ok {
		t.Error("want the namespace's own resource deleted")
	}
}

func TestDeletionWaitsForAccesses(t *testing.T) {
	e := newEnv(t, "")
	e.create(newBuckety("a", "shared", "shared"))
	e.reconcile("a", "shared")
	e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "reader", UID: "reader-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "shared"}, CredentialsSecretName: "reader", Role: v1.RoleReadOnly}})
	if err := e.c.Delete(context.Background(), e.buckety("a", "shared")); err != nil {
		t.Fatal(err)
	}
	e.reconcile("a", "shared")
	b := e.buckety("a", "shared")
	if c := cond(b.Status.Conditions, v1.ConditionBlockedByAccesses); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "reader") {
		t.Errorf("want BlockedByAccesses naming reader, got %s %q", c.Status, c.Message)
	}
	if _, held := e.claim("shared"); !held {
		t.Error("want the claim kept while deletion is blocked")
	}
}

func TestImplicitAccessAndItsSecret(t *testing.T) {
	e := newEnv(t, "")
	b := newBuckety("a", "orders", "orders")
	b.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "orders-creds"}
	e.create(b)
	e.reconcile("a", "orders")
	// The pass that provisioned the resource creates the access and holds
	// its status (buckety.Held) while only the access is pending: the
	// access reads it as recorded, and the Buckety's status is written
	// once, Ready, when the access is.
	if got := e.buckety("a", "orders"); len(got.Status.Conditions) != 0 {
		t.Errorf("want the status held, not written, while only the access is pending, got %v", got.Status.Conditions)
	}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "orders"}, &v1.BucketyAccess{}); err != nil {
		t.Errorf("want the implicit access created by the provisioning pass, got %v", err)
	}
	e.reconcile("a", "orders") // woken by the access's creation: still held
	if got := e.buckety("a", "orders"); len(got.Status.Conditions) != 0 {
		t.Errorf("want the status still held, got %v", got.Status.Conditions)
	}
	e.reconcileAccess("a", "orders")
	s := &corev1.Secret{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "orders-creds"}, s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["resource"]) != "orders" {
		t.Errorf("want the Secret to name the resource, got %q", s.Data["resource"])
	}
	e.reconcile("a", "orders")
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	// An explicit access replaces the implicit one.
	e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "reader", UID: "reader-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "reader"}})
	e.reconcile("a", "orders")
	a := &v1.BucketyAccess{}
	err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "orders"}, a)
	if err == nil && a.DeletionTimestamp.IsZero() {
		t.Error("want the implicit access deleted once an explicit one exists")
	}
}

func TestAccessNeverOverwritesAForeignSecret(t *testing.T) {
	e := newEnv(t, "")
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "taken"}, Data: map[string][]byte{"mine": []byte("keep")}})
	e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "reader", UID: "reader-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "taken"}})
	e.reconcileAccess("a", "reader")
	a := &v1.BucketyAccess{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "reader"}, a); err != nil {
		t.Fatal(err)
	}
	if c := cond(a.Status.Conditions, v1.ConditionReady); c.Reason != v1.ReasonSecretConflict {
		t.Errorf("want SecretConflict, got %s", c.Reason)
	}
	s := &corev1.Secret{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "taken"}, s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["mine"]) != "keep" || len(s.Data) != 1 {
		t.Errorf("the foreign Secret was overwritten: %v", s.Data)
	}
}

func TestAccessWaitsForItsBuckety(t *testing.T) {
	e := newEnv(t, "")
	e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "early", UID: "early-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "later"}, CredentialsSecretName: "early"}})
	e.reconcileAccess("a", "early")
	a := &v1.BucketyAccess{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "early"}, a); err != nil {
		t.Fatal(err)
	}
	if c := cond(a.Status.Conditions, v1.ConditionReady); c.Reason != v1.ReasonBucketyNotFound {
		t.Errorf("want BucketyNotFound, got %s", c.Reason)
	}
	e.create(newBuckety("a", "later", "later"))
	e.svc.FailNext(drivertest.Unavailable())
	e.reconcile("a", "later")
	e.reconcileAccess("a", "early")
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "early"}, a); err != nil {
		t.Fatal(err)
	}
	if c := cond(a.Status.Conditions, v1.ConditionReady); c.Reason != v1.ReasonBucketyNotReady {
		t.Errorf("want BucketyNotReady while the Buckety is not provisioned, got %s", c.Reason)
	}
	e.reconcile("a", "later")
	e.reconcileAccess("a", "early")
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "early"}, a); err != nil {
		t.Fatal(err)
	}
	if c := cond(a.Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("want Ready once the Buckety is provisioned, got %s (%s)", c.Reason, c.Message)
	}
}

// adoptEnv is a backend that allows adoption, with a name policy as the
// README recommends.
const adoptEnv = "  namePolicy: {prefix: \"$${namespace}.\"}\n  adoption: {allow: true}\n"

func TestAdoptionNeedsBothKeys(t *testing.T) {
	for _, c := range []struct {
		name     string
		config   string
		adoption v1.Adoption
		want     string
		hint     string
	}{
		{"neither", "", "", v1.ReasonAdoptionRefused, "empty it"},
		{"tenant only", "", v1.AdoptionAdopt, v1.ReasonAdoptionRefused, "does not allow adoption"},
		{"maintainer only", adoptEnv, "", v1.ReasonAdoptionRefused, "set spec.adoption: Adopt"},
		{"maintainer only, Refuse", adoptEnv, v1.AdoptionRefuse, v1.ReasonAdoptionRefused, "set spec.adoption: Adopt"},
		{"both", adoptEnv, v1.AdoptionAdopt, v1.ReasonReconciled, "in sync"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.config)
			e.svc.Put("a.full", 3)
			b := newBuckety("a", "full", "a.full")
			b.Spec.Adoption = c.adoption
			e.create(b)
			e.reconcile("a", "full")
			b = e.buckety("a", "full")
			status := metav1.ConditionFalse
			if c.want == v1.ReasonReconciled {
				status = metav1.ConditionTrue
			}
			if got := e.wantReady(b, status, c.want); !strings.Contains(got.Message, c.hint) {
				t.Errorf("want the message to say %q, got %q", c.hint, got.Message)
			}
			cl, held := e.claim("a.full")
			if c.want == v1.ReasonAdoptionRefused {
				if held {
					t.Error("want the claim of a refused adoption released")
				}
				return
			}
			if !held || cl.Spec.Phase != v1.ClaimAdopted || b.Status.Provenance != v1.ProvenanceAdopted {
				t.Errorf("want claim Adopted and provenance Adopted, got claim %q (held %v), provenance %q", cl.Spec.Phase, held, b.Status.Provenance)
			}
			if s, _ := e.svc.Get("a.full"); s.Records != 3 {
				t.Errorf("want the content kept, got %d records", s.Records)
			}
		})
	}
}

func TestAdoptionReportsDriftBeforeApplying(t *testing.T) {
	for _, c := range []struct {
		name string
		// settle is what the tenant does about the reported drift.
		settle func(b *v1.Buckety)
		want   map[string]string
	}{
		{"parameters matched", func(b *v1.Buckety) { b.Spec.Parameters = map[string]string{"size": "5"} }, map[string]string{"size": "5"}},
		{"converge", func(b *v1.Buckety) { b.Spec.Adoption = v1.AdoptionAndConverge }, map[string]string{"size": "9"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, adoptEnv)
			e.svc.PutWith("a.legacy", 7, map[string]string{"size": "5"})
			b := newBuckety("a", "legacy", "a.legacy")
			b.Spec.Adoption = v1.AdoptionAdopt
			b.Spec.Parameters = map[string]string{"size": "9"}
			b.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "legacy"}
			e.create(b)
			for range 2 { // nothing changes on a second pass either
				res := e.reconcile("a", "legacy")
				b = e.buckety("a", "legacy")
				got := e.wantReady(b, metav1.ConditionFalse, v1.ReasonAdoptionDrift)
				if !strings.Contains(got.Message, "map[size:5] -> map[size:9]") {
					t.Errorf("want the difference listed, got %q", got.Message)
				}
				if p := cond(b.Status.Conditions, v1.ConditionProvisioned); p.Status != metav1.ConditionFalse {
					t.Errorf("want Provisioned=False while the adoption is not settled (accesses wait), got %s", p.Status)
				}
				if res.RequeueAfter < retry.PermanentBase {
					t.Errorf("want the wait for the tenant on the permanent backoff (at least %s), got %s", retry.PermanentBase, res.RequeueAfter)
				}
			}
			if s, _ := e.svc.Get("a.legacy"); s.Parameters["size"] != "5" {
				t.Errorf("want nothing applied before the tenant agrees, got %v", s.Parameters)
			}
			if cl, _ := e.claim("a.legacy"); cl.Spec.Phase != v1.ClaimAdopting {
				t.Errorf("want the claim Adopting until settled, got %q", cl.Spec.Phase)
			}
			var list v1.BucketyAccessList
			if err := e.c.List(context.Background(), &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 0 {
				t.Errorf("want no access materialised before the adoption settles, got %d", len(list.Items))
			}
			before := b.DeepCopy()
			c.settle(b)
			if err := e.c.Patch(context.Background(), b, client.MergeFrom(before)); err != nil {
				t.Fatal(err)
			}
			e.reconcile("a", "legacy")
			e.reconcileAccess("a", "legacy") // the access the settled adoption created
			e.reconcile("a", "legacy")
			b = e.buckety("a", "legacy")
			if p := cond(b.Status.Conditions, v1.ConditionProvisioned); p.Status != metav1.ConditionTrue {
				t.Errorf("want Provisioned=True once settled, got %s (%s)", p.Status, p.Message)
			}
			if cl, _ := e.claim("a.legacy"); cl.Spec.Phase != v1.ClaimAdopted || b.Status.Provenance != v1.ProvenanceAdopted {
				t.Errorf("want claim and provenance Adopted once settled, got %q, %q", cl.Spec.Phase, b.Status.Provenance)
			}
			s, _ := e.svc.Get("a.legacy")
			if s.Parameters["size"] != c.want["size"] || s.Records != 7 {
				t.Errorf("want parameters %v and 7 records, got %v and %d", c.want, s.Parameters, s.Records)
			}
			// Settled: managed normally, so drift out of band is repaired.
			e.svc.PutWith("a.legacy", 7, map[string]string{"size": "1"})
			e.reconcile("a", "legacy")
			if s, _ := e.svc.Get("a.legacy"); s.Parameters["size"] != c.want["size"] {
				t.Errorf("want drift repaired after the adoption settled, got %v", s.Parameters)
			}
		})
	}
}

func TestAdoptedDeletionNeedsDeleteAdopted(t *testing.T) {
	for _, c := range []struct {
		name     string
		config   string
		settled  bool
		wantGone bool
	}{
		{"retained by default", adoptEnv, true, false},
		{"deleted with deleteAdopted", "  namePolicy: {prefix: \"$${namespace}.\"}\n  adoption: {allow: true, deleteAdopted: true}\n", true, true},
		{"unsettled adoption retained even with deleteAdopted", "  namePolicy: {prefix: \"$${namespace}.\"}\n  adoption: {allow: true, deleteAdopted: true}\n", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, c.config)
			e.svc.PutWith("a.old", 4, map[string]string{"size": "5"})
			b := newBuckety("a", "old", "a.old")
			b.Spec.Adoption = v1.AdoptionAdopt
			b.Spec.RetentionPolicy = v1.RetentionDelete
			b.Spec.Parameters = map[string]string{"size": "9"}
			if c.settled {
				b.Spec.Parameters["size"] = "5"
			}
			e.create(b)
			e.reconcile("a", "old")
			e.deleteAndReconcile("a", "old")
			if _, exists := e.svc.Get("a.old"); exists == c.wantGone {
				t.Errorf("want gone=%v, exists=%v", c.wantGone, exists)
			}
			// Kept, retained, where the owner wrote to a resource left in
			// place; released where it is gone or never written to (an
			// adoption that never settled).
			keep := c.settled && !c.wantGone
			if cl, held := e.claim("a.old"); held != keep || (held && !claims.IsRetained(cl)) {
				t.Errorf("want the claim kept as retained=%v, got held=%v %+v", keep, held, cl.Spec)
			}
		})
	}
}

func TestHostileAdoptionIsRefusedByTheNamePolicy(t *testing.T) {
	e := newEnv(t, adoptEnv)
	e.svc.Put("victim.orders", 10)
	b := newBuckety("attacker", "orders", "victim.orders")
	b.Spec.Adoption = v1.AdoptionAndConverge
	e.create(b)
	e.reconcile("attacker", "orders")
	e.wantReady(e.buckety("attacker", "orders"), metav1.ConditionFalse, v1.ReasonInvalidName)
	if _, held := e.claim("victim.orders"); held {
		t.Error("want no claim on another namespace's name")
	}
	if e.svc.Calls("inspect")+e.svc.Calls("ensure") != 0 {
		t.Error("want the backend untouched")
	}
}

// TestDeletionWithoutProgressBacksOff: a delete pass that removes nothing
// and still reports more to do (an S3 server whose DeleteBucket counts
// entries its listings never show) is retried with growing waits and
// without an event each pass: it went on every second, with an event
// each, for ever. A pass that removes something goes on at once.
func TestDeletionWithoutProgressBacksOff(t *testing.T) {
	e := newEnv(t, "")
	b := newBuckety("a", "stuck", "stuck")
	b.Spec.RetentionPolicy = v1.RetentionDelete
	e.create(b)
	e.reconcile("a", "stuck")
	e.wantReady(e.buckety("a", "stuck"), metav1.ConditionTrue, v1.ReasonReconciled)
	if err := e.c.Delete(context.Background(), e.buckety("a", "stuck")); err != nil {
		t.Fatal(err)
	}
	progressEvents := func() int {
		n := 0
		for _, ev := range e.events() {
			if strings.Contains(ev, v1.EventDeletionProgress) {
				n++
			}
		}
		return n
	}
	var delays []time.Duration
	for range 3 {
		before := e.svc.Calls("delete")
		e.svc.FailNext(&drivers.InProgressError{Remaining: -1, Message: "not empty, though its listings show nothing"})
		delays = append(delays, e.reconcile("a", "stuck").RequeueAfter)
		if got := e.svc.Calls("delete"); got != before+1 {
			t.Fatalf("want one delete call per pass, got %d after %d", got, before)
		}
	}
	if !(delays[0] < delays[1] && delays[1] < delays[2]) || delays[2] <= buckety.DeletePassInterval {
		t.Errorf("passes without progress: want growing waits past %s, got %v", buckety.DeletePassInterval, delays)
	}
	if n := progressEvents(); n != 0 {
		t.Errorf("passes without progress: want no DeletionProgress event, got %d", n)
	}
	e.svc.FailNext(&drivers.InProgressError{Done: 5, Remaining: -1, Message: "more remain"})
	if d := e.reconcile("a", "stuck").RequeueAfter; d != buckety.DeletePassInterval {
		t.Errorf("a pass that removed 5: want the next at %s, got %s", buckety.DeletePassInterval, d)
	}
	if n := progressEvents(); n != 1 {
		t.Errorf("a pass that removed 5: want one DeletionProgress event, got %d", n)
	}
	for range 5 {
		e.reconcile("a", "stuck")
	}
	if _, ok := e.svc.Get("stuck"); ok {
		t.Error("want the resource deleted once its passes end")
	}
}

// TestDeletionAfterAReleasedClaimSaysNotLeftInPlace: a deletion pass that
// deleted the resource and released its claim, then died before the
// finalizer went, leaves no claim; the next pass must not report the
// deleted resource "left in place".
func TestDeletionAfterAReleasedClaimSaysNotLeftInPlace(t *testing.T) {
	e := newEnv(t, "")
	b := newBuckety("a", "gone", "gone")
	b.Spec.RetentionPolicy = v1.RetentionDelete
	e.create(b)
	e.reconcile("a", "gone")
	e.wantReady(e.buckety("a", "gone"), metav1.ConditionTrue, v1.ReasonReconciled)
	cl, ok := e.claim("gone")
	if !ok {
		t.Fatal("want a claim on gone")
	}
	// The pass that died: the resource deleted, the claim released.
	if err := e.svc.Delete(context.Background(), drivers.Resource{Name: "gone"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	e.events()
	e.deleteAndReconcile("a", "gone")
	for _, ev := range e.events() {
		if strings.Contains(ev, "in place:") {
			t.Errorf("a Buckety with retentionPolicy Delete whose claim an earlier pass released: want no \"left in place\", got %q", ev)
		}
	}
}
