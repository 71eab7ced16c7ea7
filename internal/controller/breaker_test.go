package controller_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// backendCalls counts the requests the passes made of the test service.
func (e *env) backendCalls() int {
	return e.svc.Calls("inspect") + e.svc.Calls("ensure") + e.svc.Calls("delete")
}

// TestBreakerHoldsBackPassesOfAHungBackend: once passes in a row find a
// backend unavailable, a Buckety whose status already says so runs its
// pass only as one of the Breaker's probes: with the probe taken (hung on
// the backend), another such pass ends at once, asking the backend
// nothing and writing nothing, and is retried on its backoff. A Buckety
// whose status does not say so yet still runs its pass. The first probe
// that gets an answer lets every pass through again.
func TestBreakerHoldsBackPassesOfAHungBackend(t *testing.T) {
	e := newEnv(t, "")
	br := &retry.Breaker{Threshold: 2, Probes: 1}
	e.br.Breaker = br
	for _, n := range []string{"h0", "h1", "fresh"} {
		e.create(newBuckety("a", n, n))
	}
	e.svc.FailNext(drivertest.Unavailable(), drivertest.Unavailable())
	e.reconcile("a", "h0")
	if br.Down("svc") {
		t.Fatal("want the backend up after one pass found it unavailable (threshold 2)")
	}
	e.reconcile("a", "h1")
	for _, n := range []string{"h0", "h1"} {
		e.wantReady(e.buckety("a", n), metav1.ConditionFalse, v1.ReasonBackendUnreachable)
	}
	if !br.Down("svc") {
		t.Fatal("want the backend down after two passes in a row found it unavailable")
	}

	// h0's pass is the probe, and hangs on the backend.
	e.svc.Hang(true)
	calls := e.backendCalls()
	probeCtx, cancelProbe := context.WithCancel(context.Background())
	defer cancelProbe()
	probeDone := make(chan error, 1)
	go func() {
		_, err := e.br.Reconcile(probeCtx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "h0"}})
		probeDone <- err
	}()
	deadline := time.Now().Add(time.Minute) // a backstop, not a speed goal
	for e.backendCalls() == calls {
		if time.Now().After(deadline) {
			t.Fatal("h0's probe did not reach the backend within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// h1 is held back: no request, no write, retried on its backoff.
	before := e.buckety("a", "h1")
	calls = e.backendCalls()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a backstop: without the breaker the pass hangs
	res, err := e.br.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "h1"}})
	cancel()
	if err != nil || res.RequeueAfter <= 0 {
		t.Errorf("held back: want a retry after a while and no error, got %+v (%v)", res, err)
	}
	if got := e.backendCalls(); got != calls {
		t.Errorf("held back: want no request of the backend, got %d", got-calls)
	}
	if after := e.buckety("a", "h1"); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("held back: want h1 not written, resourceVersion %s became %s", before.ResourceVersion, after.ResourceVersion)
	}

	// fresh has not found the backend unavailable: its pass runs, and
	// finds so (it hangs until its context ends).
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	if _, err := e.br.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "fresh"}}); err != nil {
		t.Errorf("fresh: %v", err)
	}
	cancel()
	if got := e.backendCalls(); got == calls {
		t.Error("fresh: want its pass to ask the backend, which its status does not say is unavailable")
	}
	e.wantReady(e.buckety("a", "fresh"), metav1.ConditionFalse, v1.ReasonBackendUnreachable)

	// The backend answers again: the probe ends, the next pass of h1 is
	// a probe, gets an answer, and the backend is up.
	cancelProbe()
	select {
	case err := <-probeDone:
		if err != nil {
			t.Errorf("h0's probe: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("h0's probe did not end a minute after its context")
	}
	e.svc.Hang(false)
	e.reconcile("a", "h1")
	e.wantReady(e.buckety("a", "h1"), metav1.ConditionTrue, v1.ReasonReconciled)
	if br.Down("svc") {
		t.Error("want the backend up once a probe got an answer")
	}
	e.reconcile("a", "h0")
	e.wantReady(e.buckety("a", "h0"), metav1.ConditionTrue, v1.ReasonReconciled)
}

// liveAccess is ns/name, which must exist.
func (e *env) liveAccess(ns, name string) *v1.BucketyAccess {
	e.t.Helper()
	a, ok := e.access(ns, name)
	if !ok {
		e.t.Fatalf("access %s/%s is gone", ns, name)
	}
	return a
}

// TestBreakerHoldsBackAccessPasses: the same for the access controller,
// whose passes wait on the backend's Grant: with the probe hung, an
// access whose status already says the backend is unreachable ends its
// pass at once, asking nothing and writing nothing; the first answer
// lets it through.
func TestBreakerHoldsBackAccessPasses(t *testing.T) {
	e := newEnv(t, "")
	br := &retry.Breaker{Threshold: 2, Probes: 1}
	e.ar.Breaker = br
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	for _, n := range []string{"a0", "a1"} {
		e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: n, UID: types.UID("uid-" + n)}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: n}})
	}
	e.svc.FailNext(drivertest.Unavailable(), drivertest.Unavailable())
	for _, n := range []string{"a0", "a1"} {
		e.reconcileAccess("a", n)
		if c := cond(e.liveAccess("a", n).Status.Conditions, v1.ConditionBackendUnavailable); c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonBackendUnreachable {
			t.Fatalf("%s: want BackendUnavailable True (BackendUnreachable), got %s (%s)", n, c.Status, c.Reason)
		}
	}
	if !br.Down("svc") {
		t.Fatal("want the backend down after two access passes in a row found it unavailable")
	}

	e.svc.Hang(true)
	grants := e.svc.Calls("grant")
	probeCtx, cancelProbe := context.WithCancel(context.Background())
	defer cancelProbe()
	probeDone := make(chan error, 1)
	go func() {
		_, err := e.ar.Reconcile(probeCtx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "a0"}})
		probeDone <- err
	}()
	deadline := time.Now().Add(time.Minute) // a backstop, not a speed goal
	for e.svc.Calls("grant") == grants {
		if time.Now().After(deadline) {
			t.Fatal("a0's probe did not reach the backend within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := e.liveAccess("a", "a1")
	grants = e.svc.Calls("grant")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a backstop: without the breaker the pass hangs
	res, err := e.ar.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "a1"}})
	cancel()
	if err != nil || res.RequeueAfter <= 0 {
		t.Errorf("held back: want a retry after a while and no error, got %+v (%v)", res, err)
	}
	if got := e.svc.Calls("grant"); got != grants {
		t.Errorf("held back: want no grant asked of the backend, got %d", got-grants)
	}
	if after := e.liveAccess("a", "a1"); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("held back: want a1 not written, resourceVersion %s became %s", before.ResourceVersion, after.ResourceVersion)
	}
	cancelProbe()
	select {
	case err := <-probeDone:
		if err != nil {
			t.Errorf("a0's probe: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a0's probe did not end a minute after its context")
	}
	e.svc.Hang(false)
	e.reconcileAccess("a", "a1")
	if c := cond(e.liveAccess("a", "a1").Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("a1 once the backend answers: want Ready, got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}
	if br.Down("svc") {
		t.Error("want the backend up once a probe got an answer")
	}
}
