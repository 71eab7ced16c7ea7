package controller_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
)

// Unit tests of what a hostile tenant tries, on the fake client and the
// in-memory driver; test/integration repeats them on the real control
// plane and backends.

// patchSpec changes a Buckety's spec as a tenant would.
func (e *env) patchSpec(ns, name string, mutate func(*v1.Buckety)) {
	e.t.Helper()
	b := e.buckety(ns, name)
	before := b.DeepCopy()
	mutate(b)
	if err := e.c.Patch(context.Background(), b, client.MergeFrom(before)); err != nil {
		e.t.Fatal(err)
	}
}

// TestAdoptionKeysRecheckedEveryPass: an adoption waiting for the tenant
// (claim Adopting) is not completed once the tenant withdraws its key:
// the resource, which holds content, is refused and the claim released;
// nothing is ever written to it.
func TestAdoptionKeysRecheckedEveryPass(t *testing.T) {
	e := newEnv(t, "  adoption: {allow: true}\n")
	e.svc.PutWith("legacy", 5, map[string]string{"size": "1"})
	b := newBuckety("a", "legacy", "legacy")
	b.Spec.Adoption = v1.AdoptionAdopt
	b.Spec.Parameters = map[string]string{"size": "2"}
	e.create(b)
	e.reconcile("a", "legacy")
	e.wantReady(e.buckety("a", "legacy"), metav1.ConditionFalse, v1.ReasonAdoptionDrift)
	if cl, _ := e.claim("legacy"); cl.Spec.Phase != v1.ClaimAdopting {
		t.Fatalf("want the adoption pending (Adopting), got %s", cl.Spec.Phase)
	}
	// The tenant withdraws its key, then matches the parameters: without
	// the re-check, the next pass would settle the adoption.
	e.patchSpec("a", "legacy", func(b *v1.Buckety) {
		b.Spec.Adoption = v1.AdoptionRefuse
		b.Spec.Parameters = map[string]string{"size": "1"}
	})
	e.reconcile("a", "legacy")
	e.wantReady(e.buckety("a", "legacy"), metav1.ConditionFalse, v1.ReasonAdoptionRefused)
	if _, held := e.claim("legacy"); held {
		t.Error("want the claim released once the key is withdrawn")
	}
	if n := e.svc.Calls("write"); n != 0 {
		t.Errorf("want nothing written to the resource, got %d writes", n)
	}
}

// TestMaintainerWithdrawsAdoption: the same, when the maintainer's key
// goes (the backend no longer sets adoption.allow) while an adoption is
// pending.
func TestMaintainerWithdrawsAdoption(t *testing.T) {
	e := newEnv(t, "")
	e.svc.PutWith("legacy", 5, nil)
	b := newBuckety("a", "legacy", "legacy")
	b.Spec.Adoption = v1.AdoptionAdopt
	e.create(b)
	b = e.buckety("a", "legacy")
	e.create(&v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("svc", "legacy"), Labels: map[string]string{v1.ClaimOwnerLabel: string(b.UID)}},
		Spec: v1.BucketyClaimSpec{Backend: "svc", ResourceName: "legacy", Phase: v1.ClaimAdopting, Owner: v1.ClaimOwner{Namespace: "a", Name: "legacy", UID: string(b.UID)}}})
	e.reconcile("a", "legacy")
	c := e.wantReady(e.buckety("a", "legacy"), metav1.ConditionFalse, v1.ReasonAdoptionRefused)
	if !strings.Contains(c.Message, "no longer allowed") {
		t.Errorf("want the withdrawal explained, got %q", c.Message)
	}
	if _, held := e.claim("legacy"); held {
		t.Error("want the claim released")
	}
	if b := e.buckety("a", "legacy"); b.Status.Provenance != "" {
		t.Errorf("want nothing stamped, got provenance %s", b.Status.Provenance)
	}
}

// TestExistingEmptyResourceIsNotConverged: by default, an existing empty
// resource nobody claims or records is refused, and nothing is written to
// it (it may be someone else's live resource whose content has expired);
// with both adoption keys it is adopted only once it matches
// spec.parameters, and nothing is written to it until then.
func TestExistingEmptyResourceIsNotConverged(t *testing.T) {
	e := newEnv(t, "  adoption: {allow: true}\n")
	e.svc.PutWith("theirs", 0, map[string]string{"size": "604800000"})
	b := newBuckety("a", "theirs", "theirs")
	b.Spec.Parameters = map[string]string{"size": "1"}
	e.create(b)
	e.reconcile("a", "theirs")
	if c := e.wantReady(e.buckety("a", "theirs"), metav1.ConditionFalse, v1.ReasonAdoptionRefused); !strings.Contains(c.Message, "set spec.adoption: Adopt") {
		t.Errorf("want the refusal to name the tenant's key, got %q", c.Message)
	}
	e.patchSpec("a", "theirs", func(b *v1.Buckety) { b.Spec.Adoption = v1.AdoptionAdopt })
	e.reconcile("a", "theirs")
	c := e.wantReady(e.buckety("a", "theirs"), metav1.ConditionFalse, v1.ReasonAdoptionDrift)
	if !strings.Contains(c.Message, "AdoptAndConverge") {
		t.Errorf("want the message to say how to converge, got %q", c.Message)
	}
	if got, _ := e.svc.Get("theirs"); got.Parameters["size"] != "604800000" || e.svc.Calls("write") != 0 {
		t.Errorf("want the existing resource untouched, got %v after %d writes", got.Parameters, e.svc.Calls("write"))
	}
	e.patchSpec("a", "theirs", func(b *v1.Buckety) { b.Spec.Parameters = map[string]string{"size": "604800000"} })
	e.reconcile("a", "theirs")
	e.wantReady(e.buckety("a", "theirs"), metav1.ConditionTrue, v1.ReasonReconciled)
	if b := e.buckety("a", "theirs"); b.Status.Provenance != v1.ProvenanceAdopted {
		t.Errorf("want it Adopted once it matches, got %s", b.Status.Provenance)
	}
}

// TestLocationFromTheClaim: a location parameter edited after the claim
// (here while the Buckety is deleted) is reported and never used: deletion
// goes where the claim recorded.
func TestLocationFromTheClaim(t *testing.T) {
	e := newEnvDriver(t, "", nil, &drivertest.Driver{Locate: []string{"zone"}})
	b := newBuckety("a", "orders", "orders")
	b.Spec.Parameters = map[string]string{"zone": "eu"}
	b.Spec.RetentionPolicy = v1.RetentionDelete
	e.create(b)
	e.reconcile("a", "orders")
	cl, _ := e.claim("orders")
	if cl.Spec.Location["zone"] != "eu" {
		t.Fatalf("want the claim to record zone eu, got %v", cl.Spec.Location)
	}
	e.patchSpec("a", "orders", func(b *v1.Buckety) { b.Spec.Parameters = map[string]string{"zone": "us"} })
	ensures := e.svc.Calls("ensure")
	e.reconcile("a", "orders")
	if c := e.wantReady(e.buckety("a", "orders"), metav1.ConditionFalse, v1.ReasonInvalidParameters); !strings.Contains(c.Message, `spec.parameters[zone] is "us", but orders was claimed with "eu"`) {
		t.Errorf("want the change named, got %q", c.Message)
	}
	if e.svc.Calls("ensure") != ensures {
		t.Error("want no Ensure while the location differs from the claim")
	}
	e.deleteAndReconcile("a", "orders")
	if got := e.svc.LastResource("delete"); got.Name != "orders" || got.Parameters["zone"] != "eu" {
		t.Errorf("want the delete made with the claimed zone eu, got %+v", got)
	}
}

// TestLaggingCacheDoesNotCreate: a claim the cache still shows but the API
// server no longer has (released, or taken by another Buckety) is
// confirmed fresh before Ensure writes: the resource, deleted meanwhile,
// is not re-created as an orphan.
func TestLaggingCacheDoesNotCreate(t *testing.T) {
	var gone nameSet
	e := newEnvWith(t, "", func(c client.WithWatch) (client.Client, client.Reader) {
		fresh := interceptor.NewClient(c, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*v1.BucketyClaim); ok && gone.is(key.Name) {
					return apierrors.NewNotFound(v1.GroupVersion.WithResource("bucketyclaims").GroupResource(), key.Name)
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		return c, fresh
	})
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	// Out of band: the topic is deleted, and the claim is gone on the API
	// server while this controller's cache still shows it.
	if err := e.svc.Delete(context.Background(), drivers.Resource{Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	gone.add(claims.Name("svc", "orders"))
	writes := e.svc.Calls("write")
	e.reconcile("a", "orders")
	if _, exists := e.svc.Get("orders"); exists || e.svc.Calls("write") != writes {
		t.Errorf("want nothing re-created on a claim the API server no longer has, got exists=%v, %d writes", exists, e.svc.Calls("write")-writes)
	}
	if c := e.wantReady(e.buckety("a", "orders"), metav1.ConditionFalse, v1.ReasonProgressing); !strings.Contains(c.Message, "nothing was written to the backend") {
		t.Errorf("want the lost claim reported, got %q", c.Message)
	}
}

// TestNamespaceLimit: a namespace at its backend's limit gets no new claim;
// the Buckety waits, and is woken (alone) when one of the namespace's
// claims is released.
func TestNamespaceLimit(t *testing.T) {
	e := newEnv(t, "  limits: {perNamespace: 1}\n")
	released := make(chan event.GenericEvent, 10)
	e.br.Released = released
	first := newBuckety("a", "first", "first")
	first.Spec.RetentionPolicy = v1.RetentionDelete // its deletion frees the place
	e.create(first)
	e.create(newBuckety("a", "second", "second"))
	e.create(newBuckety("b", "other", "other"))
	e.create(newBuckety("c", "conflict", "first"))
	e.reconcile("a", "first")
	e.reconcile("a", "second")
	e.reconcile("b", "other")
	e.reconcile("c", "conflict")
	e.wantReady(e.buckety("c", "conflict"), metav1.ConditionFalse, v1.ReasonNameConflict)
	if c := e.wantReady(e.buckety("a", "second"), metav1.ConditionFalse, v1.ReasonLimitExceeded); !strings.Contains(c.Message, "limits.perNamespace: 1") {
		t.Errorf("want the limit named, got %q", c.Message)
	}
	if _, held := e.claim("second"); held {
		t.Error("want no claim beyond the limit")
	}
	e.wantReady(e.buckety("b", "other"), metav1.ConditionTrue, v1.ReasonReconciled)
	e.deleteAndReconcile("a", "first")
	woken := map[string]bool{}
	for len(released) > 0 {
		ev := <-released
		woken[ev.Object.GetNamespace()+"/"+ev.Object.GetName()] = true
	}
	if !woken["a/second"] || !woken["c/conflict"] || len(woken) != 2 {
		t.Errorf("want exactly a/second (the namespace's limit) and c/conflict (the name) woken, got %v", woken)
	}
	e.reconcile("a", "second")
	e.wantReady(e.buckety("a", "second"), metav1.ConditionTrue, v1.ReasonReconciled)
}

// TestRetainedCountsUntilReleased (issue 50, 3): a Buckety deleted with
// retentionPolicy Retain leaves its resource on the backend, and its
// claim stays, retained, counting against the namespace: create, delete,
// repeat no longer walks past limits.perNamespace. Re-applying a Buckety
// for the retained resource takes it over under the usual adoption rules
// (here refused: it holds content), and the refusal reverts the claim to
// retained, still counted. A maintainer's release frees the place.
func TestRetainedCountsUntilReleased(t *testing.T) {
	e := newEnv(t, "  limits: {perNamespace: 1}\n")
	e.create(newBuckety("a", "first", "first"))
	e.reconcile("a", "first")
	e.wantReady(e.buckety("a", "first"), metav1.ConditionTrue, v1.ReasonReconciled)
	e.svc.Put("first", 3) // the tenant filled it
	e.deleteAndReconcile("a", "first")
	cl, held := e.claim("first")
	if !held || !claims.IsRetained(cl) || cl.Spec.Retained.Owner.Name != "first" || cl.Spec.Retained.Phase != v1.ClaimCreated {
		t.Fatalf("want the claim kept, retained from a/first (Created), got held=%v %+v", held, cl.Spec)
	}
	if _, exists := e.svc.Get("first"); !exists {
		t.Fatal("want the resource retained on the backend")
	}
	e.create(newBuckety("a", "second", "second"))
	e.reconcile("a", "second")
	if c := e.wantReady(e.buckety("a", "second"), metav1.ConditionFalse, v1.ReasonLimitExceeded); !strings.Contains(c.Message, "counting 1 resources retained on the backend") {
		t.Errorf("want the retained resource named in the limit, got %q", c.Message)
	}

	// The same Buckety applied again: the resource holds content and no
	// adoption key is set, so it is refused, and the claim stays counted.
	again := newBuckety("a", "first", "first")
	again.UID = "a-first-uid-2"
	e.create(again)
	e.reconcile("a", "first")
	e.wantReady(e.buckety("a", "first"), metav1.ConditionFalse, v1.ReasonAdoptionRefused)
	if cl, held := e.claim("first"); !held || !claims.IsRetained(cl) || cl.Spec.Owner.UID != "a-first-uid" {
		t.Fatalf("want the refused takeover reverted to the retained claim of a/first, got held=%v %+v", held, cl.Spec)
	}
	e.deleteAndReconcile("a", "first")
	e.reconcile("a", "second")
	e.wantReady(e.buckety("a", "second"), metav1.ConditionFalse, v1.ReasonLimitExceeded)

	// The maintainer releases it: the place is free.
	cl, _ = e.claim("first")
	if err := e.c.Delete(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	e.reconcile("a", "second")
	e.wantReady(e.buckety("a", "second"), metav1.ConditionTrue, v1.ReasonReconciled)
}

// TestRetainedTakenOverEmpty: a retained resource that is empty is taken
// over by the Buckety applied again (adopted, as today) without a second
// place: the retained claim becomes its claim.
func TestRetainedTakenOverEmpty(t *testing.T) {
	e := newEnv(t, "  limits: {perNamespace: 1}\n")
	e.create(newBuckety("a", "first", "first"))
	e.reconcile("a", "first")
	e.deleteAndReconcile("a", "first")
	again := newBuckety("a", "first", "first")
	again.UID = "a-first-uid-2"
	e.create(again)
	for range 3 {
		e.reconcile("a", "first")
	}
	e.wantReady(e.buckety("a", "first"), metav1.ConditionTrue, v1.ReasonReconciled)
	cl, held := e.claim("first")
	if !held || cl.Spec.Owner.UID != "a-first-uid-2" || cl.Spec.Retained != nil || cl.Spec.Phase != v1.ClaimAdopted {
		t.Fatalf("want the claim a/first's new UID's, Adopted, no longer retained, got held=%v %+v", held, cl.Spec)
	}
}

// TestRevokeNamesTheRecordedPrincipal: an access's revocation revokes the
// principal of its BucketyCredential record, which only the controller
// writes, whatever the access's status says.
func TestRevokeNamesTheRecordedPrincipal(t *testing.T) {
	e := newEnvWith(t, "", (&secretDeletes{}).wrap)
	grantedAccess(t, e, "user-a-reader")
	a, _ := e.access("a", "reader")
	before := a.DeepCopy()
	a.Status.Principal = "someone-elses"
	if err := e.c.Status().Patch(context.Background(), a, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	e.deleteAccess("a", "reader")
	e.reconcileAccess("a", "reader")
	if got := e.svc.LastAccess("revoke"); got.Principal != "user-a-reader" {
		t.Errorf("want Revoke of the recorded principal user-a-reader, got %q", got.Principal)
	}
	var list v1.BucketyCredentialList
	if err := e.c.List(context.Background(), &list); err != nil || len(list.Items) != 0 {
		t.Errorf("want the record deleted after the revoke, got %d (%v)", len(list.Items), err)
	}
}

// TestOwnerGoneIsStamped: a claim whose Buckety was force-deleted (its
// finalizer removed by hand) is found and stamped, once.
func TestOwnerGoneIsStamped(t *testing.T) {
	e := newEnv(t, "")
	e.create(&v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("svc", "left")},
		Spec: v1.BucketyClaimSpec{Backend: "svc", ResourceName: "left", Phase: v1.ClaimCreated, Owner: v1.ClaimOwner{Namespace: "gone", Name: "ghost", UID: "ghost-uid"}}})
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	j := &claims.Janitor{Reader: e.c, Store: e.br.Claims}
	n, err := j.CheckOnce(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("want one claim stamped, got %d (%v)", n, err)
	}
	cl, _ := e.claim("left")
	if cl.Status.OwnerGoneSince == nil {
		t.Error("want status.ownerGoneSince set")
	}
	if mine, _ := e.claim("orders"); mine.Status.OwnerGoneSince != nil {
		t.Error("want a live owner's claim left alone")
	}
	if n, err := j.CheckOnce(context.Background()); err != nil || n != 0 {
		t.Errorf("want nothing stamped twice, got %d (%v)", n, err)
	}
}

// nameSet is a set of names, safe for concurrent use.
type nameSet struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *nameSet) add(n string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = map[string]bool{}
	}
	s.names[n] = true
}

func (s *nameSet) is(n string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[n]
}

// TestLimitGateDoesNotParkWorkers: under limits.perNamespace a namespace's
// passes that may take a new claim run one at a time. A pass that finds
// its namespace's gate held, here by a pass stuck in a slow backend call,
// must not wait for it (each waiting pass would hold one of the workers
// every namespace shares): it ends at once, writes no status, and asks to
// be retried soon; once the gate is free it provisions. Another
// namespace's pass is not held up either.
func TestLimitGateDoesNotParkWorkers(t *testing.T) {
	e := newEnv(t, "  limits: {perNamespace: 5}\n")
	e.create(newBuckety("a", "slow", "slow"))
	e.create(newBuckety("a", "next", "next"))
	e.create(newBuckety("b", "other", "other"))
	stuck, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.svc.BeforeEnsure = func(name string) {
		if name == "slow" {
			once.Do(func() { close(stuck) })
			<-release
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.br.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "slow"}})
		done <- err
	}()
	<-stuck // a/slow holds namespace a's gate, in its backend call

	before := e.buckety("a", "next").ResourceVersion
	returned := make(chan reconcile.Result, 1)
	go func() { returned <- e.reconcile("a", "next") }()
	select {
	case res := <-returned:
		if res.RequeueAfter <= 0 || res.RequeueAfter > 2*time.Second {
			t.Errorf("a pass that found its gate held: want a retry within 2s, got %+v", res)
		}
	case <-time.After(time.Minute):
		// The holder is released only here, so a pass that waits for the
		// gate never returns before: a minute is a backstop, not a speed
		// goal.
		close(release)
		<-returned
		t.Fatal("a pass that found its namespace's gate held waited for it")
	}
	if rv := e.buckety("a", "next").ResourceVersion; rv != before {
		// Its first pass adds the finalizer: allowed; a status write is not.
		if c := cond(e.buckety("a", "next").Status.Conditions, v1.ConditionReady); c.Reason != "" {
			t.Errorf("a pass that found its gate held: want no status written, got Ready %s (%s)", c.Status, c.Reason)
		}
	}
	e.reconcile("b", "other")
	e.wantReady(e.buckety("b", "other"), metav1.ConditionTrue, v1.ReasonReconciled)

	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.wantReady(e.buckety("a", "slow"), metav1.ConditionTrue, v1.ReasonReconciled)
	e.reconcile("a", "next")
	e.wantReady(e.buckety("a", "next"), metav1.ConditionTrue, v1.ReasonReconciled)
}

// TestRecreatedBucketyBringsBackNoAccessPastTheLimits: under
// limits.accessesPerNamespace: 1, access a1 on Buckety x is granted. The
// tenant strips x's finalizer and deletes it: a1's credentials go, and
// its place with them. Access b1 on Buckety y takes the namespace's one
// place. x applied again: a1 waits at the limit, rather than being granted
// again as one that once held a place (and each such round adding one
// more past the limit).
func TestRecreatedBucketyBringsBackNoAccessPastTheLimits(t *testing.T) {
	e := newEnv(t, "  limits: {accessesPerNamespace: 1}\n")
	ctx := context.Background()
	access := func(name, buckety string) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: buckety}, CredentialsSecretName: name}}
	}
	// The fake client sets no metadata.generation: given one, as the API
	// server would, a grant records one.
	withGeneration := func(b *v1.Buckety) *v1.Buckety { b.Generation = 1; return b }
	e.create(withGeneration(newBuckety("a", "x", "x")))
	e.reconcile("a", "x")
	e.create(access("a1", "x"))
	e.reconcileAccess("a", "a1")
	if c := cond(e.liveAccess("a", "a1").Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("a1: want Ready, got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}

	x := e.buckety("a", "x")
	x.Finalizers = nil
	if err := e.c.Update(ctx, x); err != nil {
		t.Fatal(err)
	}
	if got := e.liveAccess("a", "a1").Status.BucketyGeneration; got == 0 {
		t.Fatal("a1 granted: want status.bucketyGeneration recorded, got 0")
	}
	if err := e.c.Delete(ctx, x); err != nil {
		t.Fatal(err)
	}
	e.reconcileAccess("a", "a1")
	if got := e.liveAccess("a", "a1").Status.BucketyGeneration; got != 0 {
		t.Errorf("a1 with its Buckety gone: want status.bucketyGeneration cleared, got %d", got)
	}

	e.create(withGeneration(newBuckety("a", "y", "y")))
	e.reconcile("a", "y")
	e.create(access("b1", "y"))
	e.reconcileAccess("a", "b1")
	if c := cond(e.liveAccess("a", "b1").Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("b1: want Ready, got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}

	again := withGeneration(newBuckety("a", "x", "x"))
	again.UID = "a-x-uid-again"
	e.create(again)
	e.reconcile("a", "x")
	e.reconcileAccess("a", "a1")
	if c := cond(e.liveAccess("a", "a1").Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonLimitExceeded {
		t.Errorf("a1 after x was applied again: want Ready False (LimitExceeded), b1 holding the one place; got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}
}

// TestLongNamedForeignAccessHoldsNoDeletionBack: with no webhook, a tenant
// of namespace evil creates an access whose name is too long to label a
// Secret, naming Buckety victim/vb, which shares nothing. It is withdrawn
// (NotShared) as any access the Buckety does not share with, not merely
// invalid, so it holds nothing and does not hold vb's deletion back,
// which its owner could otherwise only end by stripping its own finalizer.
func TestLongNamedForeignAccessHoldsNoDeletionBack(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	e.create(newBuckety("victim", "vb", "vb"))
	e.reconcile("victim", "vb")
	long := strings.Repeat("l", v1.MaxAccessNameLength+1)
	e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "evil", Name: long, UID: "uid-long"},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "victim", Name: "vb"}, CredentialsSecretName: "s"}})
	e.reconcileAccess("evil", long)
	if c := cond(e.liveAccess("evil", long).Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonNotShared {
		t.Errorf("the long-named foreign access: want Ready False (NotShared), got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}
	if err := e.c.Delete(ctx, e.buckety("victim", "vb")); err != nil {
		t.Fatal(err)
	}
	e.reconcile("victim", "vb")
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: "victim", Name: "vb"}, &v1.Buckety{}); !apierrors.IsNotFound(err) {
		b := e.buckety("victim", "vb")
		t.Errorf("want vb's deletion not held back by evil's access, got it still there: %s", cond(b.Status.Conditions, v1.ConditionBlockedByAccesses).Message)
	}
}

// TestMovedBucketyBringsNoAccessPastTheLimits: backend svc allows one
// access per namespace, its sibling svc2 any number. Access b1 on Buckety
// y (svc) holds the namespace's place on svc; access a1 on Buckety x
// (svc2) is granted there. The tenant strips x's finalizer, deletes it and
// applies it again on svc before any pass of a1 sees it gone: a1 waits at
// svc's limit (LimitExceeded) with its grant on the old x cleared, rather
// than being granted on svc as one that once held a place, which took a
// namespace one access past svc's limit each round.
func TestMovedBucketyBringsNoAccessPastTheLimits(t *testing.T) {
	e := newEnv(t, "  limits: {accessesPerNamespace: 1}\n- name: svc2\n  driver: test\n  service: svc\n  config: {endpoint: test://service}\n")
	ctx := context.Background()
	access := func(name, buckety string) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: buckety}, CredentialsSecretName: name}}
	}
	ready := func(name string) {
		t.Helper()
		if c := cond(e.liveAccess("a", name).Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionTrue {
			t.Fatalf("%s: want Ready, got %s (%s: %s)", name, c.Status, c.Reason, c.Message)
		}
	}
	// The fake client sets no metadata.generation: each is given one, as
	// the API server would, so a grant records one.
	y := newBuckety("a", "y", "y")
	y.Generation = 1
	e.create(y)
	e.reconcile("a", "y")
	e.create(access("b1", "y"))
	e.reconcileAccess("a", "b1")
	ready("b1")
	x := newBuckety("a", "x", "x")
	x.Spec.Backend, x.Generation = "svc2", 1
	e.create(x)
	e.reconcile("a", "x")
	e.create(access("a1", "x"))
	e.reconcileAccess("a", "a1")
	ready("a1")

	x = e.buckety("a", "x")
	x.Finalizers = nil
	if err := e.c.Update(ctx, x); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(ctx, x); err != nil {
		t.Fatal(err)
	}
	again := newBuckety("a", "x", "x2")
	again.UID, again.Generation = "a-x-uid-again", 1
	e.create(again)
	e.reconcile("a", "x")
	e.reconcileAccess("a", "a1")
	got := e.liveAccess("a", "a1")
	if c := cond(got.Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonLimitExceeded {
		t.Errorf("a1 after x was applied again on svc: want Ready False (LimitExceeded), b1 holding svc's one place; got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}
	if got.Status.BucketyGeneration != 0 {
		t.Errorf("a1 refused on svc: want its grant on the old x cleared (status.bucketyGeneration 0), got %d", got.Status.BucketyGeneration)
	}
	e.reconcileAccess("a", "b1")
	ready("b1")
}

// TestForeignAccessStaysWithdrawnWithoutItsBackend: Buckety victim/vb is
// on a backend that left the config. Its rules share ReadOnly with
// namespace friend, nothing with namespace evil. evil's access is
// withdrawn all the same (NotShared: the Buckety's own rules refuse it,
// whatever the backend would say), so it holds nothing and would not hold
// vb's deletion back; friend's, which the rules let in, reports the
// backend's problem and is judged by the backend once it is back.
func TestForeignAccessStaysWithdrawnWithoutItsBackend(t *testing.T) {
	e := newEnv(t, "")
	vb := newBuckety("victim", "vb", "vb")
	vb.Spec.Backend = "gone"
	vb.Spec.Sharing = []v1.SharingRule{{Namespace: "friend", Roles: []v1.Role{v1.RoleReadOnly}}}
	e.create(vb)
	foreign := func(ns string) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a", UID: types.UID("uid-" + ns)},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "victim", Name: "vb"}, Role: v1.RoleReadOnly, CredentialsSecretName: "s"}}
	}
	e.create(foreign("evil"))
	e.create(foreign("friend"))
	e.reconcileAccess("evil", "a")
	e.reconcileAccess("friend", "a")
	evil := e.liveAccess("evil", "a")
	if c := cond(evil.Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonNotShared || !evil.Withdrawn() {
		t.Errorf("evil's access, vb's backend out of the config: want Ready False (NotShared), withdrawn; got %s (%s: %s), withdrawn %v", c.Status, c.Reason, c.Message, evil.Withdrawn())
	}
	if c := cond(e.liveAccess("friend", "a").Status.Conditions, v1.ConditionReady); c.Reason == v1.ReasonNotShared {
		t.Errorf("friend's access, which vb's rules let in: want the backend's problem reported, not NotShared; got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}
}

// TestHeldClaimIsNoProofOfBuckety: a claim that never wrote to its
// resource proves nothing about who made it. An empty resource made
// outside buckety, under a stale Adopting claim of a Buckety deleted with
// its finalizer removed (taken over as a fresh Claimed claim), or under
// this Buckety's own Adopting claim (left by a release that adopted such
// resources without the keys), is refused, not adopted, without both
// adoption keys.
func TestHeldClaimIsNoProofOfBuckety(t *testing.T) {
	for _, c := range []struct {
		name string
		own  bool
	}{{"stale claim of a deleted Buckety", false}, {"own Adopting claim of an older release", true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, "")
			e.svc.Put("theirs", 0)
			b := newBuckety("a", "theirs", "theirs")
			e.create(b)
			owner := v1.ClaimOwner{Namespace: "gone", Name: "ghost", UID: "ghost-uid"}
			if c.own {
				got := e.buckety("a", "theirs")
				owner = v1.ClaimOwner{Namespace: got.Namespace, Name: got.Name, UID: string(got.UID)}
			}
			e.create(&v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("svc", "theirs")},
				Spec: v1.BucketyClaimSpec{Backend: "svc", ResourceName: "theirs", Phase: v1.ClaimAdopting, Owner: owner}})
			for range 3 {
				e.reconcile("a", "theirs")
			}
			got := e.buckety("a", "theirs")
			if r := e.wantReady(got, metav1.ConditionFalse, v1.ReasonAdoptionRefused); !strings.Contains(r.Message, "made outside buckety") {
				t.Errorf("want it refused as made outside buckety, got %q", r.Message)
			}
			if got.Status.Provenance != "" {
				t.Errorf("want nothing stamped, got provenance %q", got.Status.Provenance)
			}
			if n := e.svc.Calls("write"); n != 0 {
				t.Errorf("want nothing written to it, got %d writes", n)
			}
		})
	}
}
