package controller_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// writeSim plays the manager for one object graph on the fake client: every
// successful write enqueues what the controller's watches would (a Buckety
// write its Buckety and its accesses; an access write the access and its
// Buckety; a Secret write its owning access), and the queue is drained in
// FIFO order, one reconcile at a time, as with a cache that is never stale.
// It counts every API request that writes (successful or not) by verb and
// resource, every event (an event is a write too) and every read that
// bypasses the cache.
type writeSim struct {
	mu     sync.Mutex
	writes map[string]int
	fresh  map[string]int
	events []string
	queue  []simItem
	queued map[simItem]bool
	c      client.Client
}

type simItem struct {
	access bool
	key    types.NamespacedName
}

func kindOf(obj runtime.Object) string {
	switch o := obj.(type) {
	case *v1.Buckety:
		return "bucketies"
	case *v1.BucketyAccess:
		return "bucketyaccesses"
	case *v1.BucketyClaim:
		return "bucketyclaims"
	case *v1.BucketyList:
		return "bucketies"
	case *v1.BucketyClaimList:
		return "bucketyclaims"
	case *corev1.Secret:
		return "secrets"
	case *metav1.PartialObjectMetadata:
		if o.Kind == "Secret" {
			return "secrets"
		}
	}
	return fmt.Sprintf("%T", obj)
}

func (s *writeSim) count(verb string, obj runtime.Object, sub string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := kindOf(obj)
	if sub != "" {
		k += "/" + sub
	}
	s.writes[verb+" "+k]++
}

func (s *writeSim) enqueue(it simItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.queued[it] {
		s.queued[it] = true
		s.queue = append(s.queue, it)
	}
}

// wrote enqueues what the controller's watches enqueue for a write to obj.
func (s *writeSim) wrote(ctx context.Context, obj client.Object) {
	ns := obj.GetNamespace()
	switch o := obj.(type) {
	case *v1.Buckety:
		s.enqueue(simItem{key: client.ObjectKeyFromObject(o)})
		var list v1.BucketyAccessList
		if err := s.c.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{objects.IndexBucketyRef: o.Name}); err == nil {
			for _, a := range list.Items {
				s.enqueue(simItem{access: true, key: client.ObjectKeyFromObject(&a)})
			}
		}
	case *v1.BucketyAccess:
		s.enqueue(simItem{access: true, key: client.ObjectKeyFromObject(o)})
		s.enqueue(simItem{key: types.NamespacedName{Namespace: ns, Name: o.Spec.BucketyRef.Name}})
	case *corev1.Secret:
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "BucketyAccess" {
			s.enqueue(simItem{access: true, key: types.NamespacedName{Namespace: ns, Name: ref.Name}})
		}
	}
}

func (s *writeSim) wrap(c client.WithWatch) (client.Client, client.Reader) {
	s.c = c
	after := func(ctx context.Context, verb string, obj client.Object, sub string, err error) error {
		s.count(verb, obj, sub)
		if err == nil {
			s.wrote(ctx, obj)
		}
		return err
	}
	wc := interceptor.NewClient(c, interceptor.Funcs{
		// The manager's cache holds only buckety's Secrets (by label).
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			switch o := obj.(type) {
			case *corev1.Secret:
				if o.Labels[v1.ManagedByLabel] != v1.ManagedByValue {
					*o = corev1.Secret{}
					return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
				}
			case *metav1.PartialObjectMetadata:
				if o.Kind == "Secret" && o.Labels[v1.ManagedByLabel] != v1.ManagedByValue {
					return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
				}
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return after(ctx, "create", obj, "", c.Create(ctx, obj, opts...))
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return after(ctx, "update", obj, "", c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return after(ctx, "patch", obj, "", c.Patch(ctx, obj, patch, opts...))
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			return after(ctx, "delete", obj, "", c.Delete(ctx, obj, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return after(ctx, "update", obj, sub, c.SubResource(sub).Update(ctx, obj, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return after(ctx, "patch", obj, sub, c.SubResource(sub).Patch(ctx, obj, patch, opts...))
		},
	})
	return wc, freshReader{s: s, r: c}
}

// freshReader counts the reads that go around the cache.
type freshReader struct {
	s *writeSim
	r client.Reader
}

func (f freshReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	f.s.mu.Lock()
	f.s.fresh["get "+kindOf(obj)]++
	f.s.mu.Unlock()
	return f.r.Get(ctx, key, obj, opts...)
}

func (f freshReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	f.s.mu.Lock()
	f.s.fresh["list "+kindOf(list)]++
	f.s.mu.Unlock()
	return f.r.List(ctx, list, opts...)
}

// countingRecorder counts events, which the event broadcaster writes as
// events.k8s.io Events.
type countingRecorder struct{ s *writeSim }

func (r countingRecorder) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.writes["create events"]++
	r.s.events = append(r.s.events, reason)
}

// drain reconciles until nothing is enqueued.
func (s *writeSim) drain(t *testing.T, e *env) int {
	t.Helper()
	passes := 0
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return passes
		}
		it := s.queue[0]
		s.queue = s.queue[1:]
		delete(s.queued, it)
		s.mu.Unlock()
		if passes++; passes > 50 {
			t.Fatalf("still reconciling after 50 passes: the controller keeps writing (writes %v)", s.writes)
		}
		var err error
		if it.access {
			_, err = e.ar.Reconcile(context.Background(), reconcile.Request{NamespacedName: it.key})
		} else {
			_, err = e.br.Reconcile(context.Background(), reconcile.Request{NamespacedName: it.key})
		}
		if err != nil {
			t.Fatalf("reconcile %+v: %v", it, err)
		}
	}
}

func (s *writeSim) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes, s.fresh, s.events = map[string]int{}, map[string]int{}, nil
}

func formatCounts(m map[string]int) string {
	var b strings.Builder
	total := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
		total += m[k]
	}
	fmt.Fprintf(&b, "(total %d)", total)
	return b.String()
}

// TestWritesPerBuckety counts the API writes one Buckety with defaultAccess
// costs from apply to Ready with its Secret, per verb and resource, so a
// change that adds a write shows here. Six, the design's minimum: the
// finalizer; the claim, born Created after the adoption check and before
// the backend create (what crash safety costs, the claims package doc); the
// access, its Secret and its status; and the Buckety's status once, Ready
// (the provisioning pass holds it for the access, buckety.Held). A new
// resource is told by the status, not by an event.
func TestWritesPerBuckety(t *testing.T) {
	s := &writeSim{queued: map[simItem]bool{}}
	s.reset()
	e := newEnvWith(t, "", s.wrap)
	e.br.Recorder, e.ar.Recorder = countingRecorder{s}, countingRecorder{s}
	b := newBuckety("a", "orders", "orders")
	b.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "orders-creds"}
	e.create(b) // the tenant's apply: not counted
	s.reset()
	s.enqueue(simItem{key: client.ObjectKeyFromObject(b)})
	passes := s.drain(t, e)

	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "orders-creds"}, &corev1.Secret{}); err != nil {
		t.Fatalf("want the Secret written: %v", err)
	}
	want := map[string]int{
		"patch bucketies":              1, // the finalizer, before anything is claimed
		"create bucketyclaims":         1, // born Created, after the adoption check and before the create
		"patch bucketies/status":       1, // Ready: the provisioning pass held its status for the access
		"create bucketyaccesses":       1, // the implicit access, born with its finalizer
		"create secrets":               1,
		"patch bucketyaccesses/status": 1, // Ready
	}
	if !maps.Equal(s.writes, want) {
		t.Errorf("writes from apply to Ready: want %s, got %s (events %v, %d passes)", formatCounts(want), formatCounts(s.writes), s.events, passes)
	}
	wantFresh := map[string]int{}
	if !maps.Equal(s.fresh, wantFresh) {
		t.Errorf("reads around the cache: want %s, got %s", formatCounts(wantFresh), formatCounts(s.fresh))
	}
	t.Logf("apply to Ready: %s in %d reconciles; fresh reads %s", formatCounts(s.writes), passes, formatCounts(s.fresh))

	// The drift re-check of a Ready Buckety and its access writes nothing.
	s.reset()
	s.enqueue(simItem{key: client.ObjectKeyFromObject(b)})
	s.enqueue(simItem{access: true, key: client.ObjectKeyFromObject(b)})
	s.drain(t, e)
	if len(s.writes) != 0 || len(s.fresh) != 0 {
		t.Errorf("re-check of a Ready Buckety: want no writes and no fresh reads, got %s; fresh %s", formatCounts(s.writes), formatCounts(s.fresh))
	}
}

// TestRefusedAdoptionWritesNoClaim: the adoption check runs before a claim
// is taken, so a Buckety refused a resource that holds content writes no
// claim at all, on its first pass or its retries (a claim created and
// released each time, before). Each refusal reads the claim fresh once:
// the cache may not show yet a claim an earlier pass of this Buckety wrote.
func TestRefusedAdoptionWritesNoClaim(t *testing.T) {
	s := &writeSim{queued: map[simItem]bool{}}
	s.reset()
	e := newEnvWith(t, "", s.wrap)
	e.br.Recorder = countingRecorder{s}
	e.svc.Put("full", 3)
	e.create(newBuckety("a", "full", "full"))
	for pass := 1; pass <= 3; pass++ {
		s.reset()
		e.reconcile("a", "full")
		e.wantReady(e.buckety("a", "full"), metav1.ConditionFalse, v1.ReasonAdoptionRefused)
		for k := range s.writes {
			if strings.Contains(k, "bucketyclaims") {
				t.Errorf("pass %d of a refused adoption: want no claim written, got %s", pass, formatCounts(s.writes))
			}
		}
		if want := map[string]int{"get bucketyclaims": 1}; !maps.Equal(s.fresh, want) {
			t.Errorf("pass %d of a refused adoption: want fresh reads %s, got %s", pass, formatCounts(want), formatCounts(s.fresh))
		}
	}
	if _, held := e.claim("full"); held {
		t.Error("want no claim on the refused resource")
	}
}

// TestSecretConflictRetryReadsFirst: the first reconcile of an access
// creates its Secret without reading first (the API server refuses a create
// over any Secret); while a conflict with a foreign Secret persists, each
// retry reads fresh instead, and writes nothing.
func TestSecretConflictRetryReadsFirst(t *testing.T) {
	s := &writeSim{queued: map[simItem]bool{}}
	s.reset()
	e := newEnvWith(t, "", s.wrap)
	e.br.Recorder, e.ar.Recorder = countingRecorder{s}, countingRecorder{s}
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	e.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "taken"}, Data: map[string][]byte{"mine": []byte("keep")}})
	e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "reader", UID: "reader-uid"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "taken"}})
	for i, c := range []struct {
		writes, fresh map[string]int
	}{
		{writes: map[string]int{"create secrets": 1, "patch bucketyaccesses": 1, "patch bucketyaccesses/status": 1, "create events": 1}, fresh: map[string]int{"get secrets": 1}},
		{writes: map[string]int{}, fresh: map[string]int{"get secrets": 1}},
	} {
		s.reset()
		e.reconcileAccess("a", "reader")
		if !maps.Equal(s.writes, c.writes) || !maps.Equal(s.fresh, c.fresh) {
			t.Errorf("reconcile %d: want writes %s and fresh reads %s, got %s and %s", i+1, formatCounts(c.writes), formatCounts(c.fresh), formatCounts(s.writes), formatCounts(s.fresh))
		}
	}
	sec := &corev1.Secret{}
	if err := s.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "taken"}, sec); err != nil || string(sec.Data["mine"]) != "keep" || len(sec.Data) != 1 {
		t.Errorf("want the foreign Secret untouched, got %v (%v)", sec.Data, err)
	}
}

// TestHeldStatusIsBounded: a provisioning pass holds its status only while
// its access may still turn Ready soon. An access that says nothing
// within Held.SilentFor (a stuck backend, a long queue), or that reports
// why it is not Ready and is not Ready within Held.For, leaves the
// Buckety's status written after it, saying what is pending; and a
// controller that restarts while a status is held (the memory lost)
// writes it, while the access waits for the recorded status as before.
func TestHeldStatusIsBounded(t *testing.T) {
	e := newEnv(t, "")
	b := newBuckety("a", "orders", "orders")
	b.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "orders-creds"}
	e.create(b)
	e.br.Held.For, e.br.Held.SilentFor = 200*time.Millisecond, 500*time.Millisecond
	res := e.reconcile("a", "orders")
	if got := e.buckety("a", "orders"); len(got.Status.Conditions) != 0 {
		t.Fatalf("want the status held, got %v", got.Status.Conditions)
	}
	if res.RequeueAfter <= 400*time.Millisecond || res.RequeueAfter > time.Second {
		t.Errorf("want the held pass back when the hold of a silent access ends (about 500ms), got requeue after %s", res.RequeueAfter)
	}
	time.Sleep(250 * time.Millisecond)
	e.reconcile("a", "orders") // the access has not reconciled yet
	if got := e.buckety("a", "orders"); len(got.Status.Conditions) != 0 {
		t.Fatalf("past Held.For, the access silent: want the status still held, got %v", got.Status.Conditions)
	}
	time.Sleep(300 * time.Millisecond)
	e.reconcile("a", "orders") // the access never reconciled
	got := e.buckety("a", "orders")
	e.wantReady(got, metav1.ConditionFalse, v1.ReasonAccessesNotReady)
	if p := cond(got.Status.Conditions, v1.ConditionProvisioned); p.Status != metav1.ConditionTrue {
		t.Errorf("want Provisioned=True written once the hold ended, got %s", p.Status)
	}

	// An access that reports a failure: the status is written at
	// Held.For.
	b3 := newBuckety("a", "ledger", "ledger")
	b3.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "ledger-creds"}
	e.create(b3)
	e.reconcile("a", "ledger")
	a3 := &v1.BucketyAccess{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "ledger"}, a3); err != nil {
		t.Fatal(err)
	}
	a3.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonBackendError, Message: "refused", LastTransitionTime: metav1.Now()}}
	if err := e.c.Status().Update(context.Background(), a3); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	e.reconcile("a", "ledger")
	e.wantReady(e.buckety("a", "ledger"), metav1.ConditionFalse, v1.ReasonAccessesNotReady)

	// A restart: nothing held, the second Buckety's status is not recorded.
	b2 := newBuckety("a", "events", "events")
	b2.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "events-creds"}
	e.create(b2)
	e.reconcile("a", "events")
	fresh := &buckety.Held{}
	e.br.Held, e.ar.Held = fresh, fresh
	e.reconcileAccess("a", "events")
	a := &v1.BucketyAccess{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "events"}, a); err != nil {
		t.Fatal(err)
	}
	if r := cond(a.Status.Conditions, v1.ConditionReady); r.Status == metav1.ConditionTrue {
		t.Errorf("after a restart the access must wait for the recorded status, got Ready=True")
	}
	e.reconcile("a", "events") // the restarted controller's first pass holds again
	e.reconcileAccess("a", "events")
	e.reconcile("a", "events")
	e.wantReady(e.buckety("a", "events"), metav1.ConditionTrue, v1.ReasonReconciled)
	if fresh.Len() != 1 {
		t.Errorf("want the held status kept until the cache shows it recorded, got %d held", fresh.Len())
	}
	e.reconcile("a", "events")
	if fresh.Len() != 0 {
		t.Errorf("want nothing held once the status is recorded, got %d", fresh.Len())
	}
}

// TestFailingGrantWritesItsStatusOnce: a new Buckety with its access, on
// a backend that times out five times in a row just after the resource is
// made (the access's grants and the Buckety's passes meet the failures),
// writes each status twice, the failure and then Ready: a retry that finds
// what the last one found writes nothing. Before, the Buckety wrote three
// to five: its passes start from the status it held in memory
// (buckety.Held), so a failure stamped transition times, to the
// nanosecond, that the recorded status did not show, and each retry
// patched them (some patches empty, the times equal to the second).
func TestFailingGrantWritesItsStatusOnce(t *testing.T) {
	s := &writeSim{queued: map[simItem]bool{}}
	s.reset()
	e := newEnvWith(t, "", s.wrap)
	b := newBuckety("a", "orders", "orders")
	b.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "orders-creds"}
	e.create(b)
	e.br.Held.For = time.Millisecond // the failure shows on the Buckety at once
	const failures = 5
	s.reset()
	e.reconcile("a", "orders") // provisions, creates the access, holds its status
	for range failures {
		e.svc.FailNext(drivertest.Unavailable())
	}
	s.enqueue(simItem{access: true, key: client.ObjectKeyFromObject(b)})
	s.drain(t, e)
	for range failures - 1 { // the backoff's retries
		time.Sleep(2 * time.Millisecond)
		e.reconcileAccess("a", "orders")
		s.drain(t, e)
	}
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	if got := e.svc.Calls("grant"); got < failures+1 {
		t.Fatalf("want at least %d grants, the failures and the success, got %d", failures+1, got)
	}
	if got := s.writes["patch bucketyaccesses/status"]; got != 2 {
		t.Errorf("access status patches over %d failed passes and the one that succeeded: want 2, got %d (writes %s)", failures, got, formatCounts(s.writes))
	}
	if got := s.writes["patch bucketies/status"]; got != 2 {
		t.Errorf("Buckety status patches: want 2 (the access failing, then Ready), got %d (writes %s)", got, formatCounts(s.writes))
	}
}

// readyOrders is a write-counting environment holding Buckety a/orders,
// provisioned and Ready.
func readyOrders(t *testing.T) (*writeSim, *env) {
	t.Helper()
	s := &writeSim{queued: map[simItem]bool{}}
	s.reset()
	e := newEnvWith(t, "", s.wrap)
	e.create(newBuckety("a", "orders", "orders"))
	s.enqueue(simItem{key: types.NamespacedName{Namespace: "a", Name: "orders"}})
	s.drain(t, e)
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	return s, e
}

// TestUnscopedAccessesWriteTheirBucketyOnce: on a backend that hands
// accesses its own credentials (the test driver does for every role but
// ReadWrite), the first such access turns its Buckety's
// ScopingNotImplemented True, one status write; the next ones write
// nothing on the Buckety, since the condition does not name them (an
// access over 128 Bucketies wrote all 128 for each new access when it
// did).
func TestUnscopedAccessesWriteTheirBucketyOnce(t *testing.T) {
	s, e := readyOrders(t)
	if c := cond(e.buckety("a", "orders").Status.Conditions, v1.ConditionScopingNotImplemented); c.Status != metav1.ConditionFalse {
		t.Fatalf("no access yet: want ScopingNotImplemented=False, got %s (%s)", c.Status, c.Reason)
	}
	for i, name := range []string{"reader-1", "reader-2", "reader-3"} {
		e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("a-" + name + "-uid")},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: name, Role: v1.RoleReadOnly}})
		s.reset()
		s.enqueue(simItem{access: true, key: types.NamespacedName{Namespace: "a", Name: name}})
		s.enqueue(simItem{key: types.NamespacedName{Namespace: "a", Name: "orders"}})
		s.drain(t, e)
		b := e.buckety("a", "orders")
		e.wantReady(b, metav1.ConditionTrue, v1.ReasonReconciled)
		if c := cond(b.Status.Conditions, v1.ConditionScopingNotImplemented); c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonCredentialsNotScoped {
			t.Fatalf("after access %s: want ScopingNotImplemented=True (%s), got %s (%s: %s)", name, v1.ReasonCredentialsNotScoped, c.Status, c.Reason, c.Message)
		}
		want := 0
		if i == 0 {
			want = 1
		}
		if got := s.writes["patch bucketies/status"]; got != want {
			t.Errorf("unscoped access %s (number %d): want %d Buckety status writes, got %d (writes %s)", name, i+1, want, got, formatCounts(s.writes))
		}
	}
}

// TestReadyBucketyHoldsForNewAccesses: a Buckety recorded Ready that gains
// an access does not turn Ready=False and back for it: its status write
// waits (buckety.Held) and, the access Ready within Held.For, nothing is
// written. An access that reports a failure has the Buckety's status
// written at once, and one that stays silent past Held.For has it
// written then; each says which access is pending.
func TestReadyBucketyHoldsForNewAccesses(t *testing.T) {
	s, e := readyOrders(t)
	newAccess := func(name string) {
		t.Helper()
		e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("a-" + name + "-uid")},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: name}})
		s.reset()
	}
	accessReady := func(name string) metav1.Condition {
		t.Helper()
		a := &v1.BucketyAccess{}
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: name}, a); err != nil {
			t.Fatal(err)
		}
		return cond(a.Status.Conditions, v1.ConditionReady)
	}

	// Ready within Held.For: no Buckety status write.
	newAccess("reader")
	e.reconcile("a", "orders") // the access's creation wakes its Buckety, before the access reconciles
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	s.drain(t, e)
	if c := accessReady("reader"); c.Status != metav1.ConditionTrue {
		t.Fatalf("want the access Ready, got %s (%s: %s)", c.Status, c.Reason, c.Message)
	}
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	if got := s.writes["patch bucketies/status"]; got != 0 {
		t.Errorf("a new access Ready within Held.For: want no Buckety status write, got %d (writes %s)", got, formatCounts(s.writes))
	}
	if n := e.br.Held.Len(); n != 0 {
		t.Errorf("want the hold forgotten once the access is Ready, got %d held", n)
	}

	// A failure: written at once.
	newAccess("failing")
	e.reconcile("a", "orders")
	e.svc.FailNext(drivertest.Unavailable())
	e.reconcileAccess("a", "failing")
	if c := accessReady("failing"); c.Status == metav1.ConditionTrue || c.Reason == "" {
		t.Fatalf("want the access to report a failure, got Ready=%s (%s)", c.Status, c.Reason)
	}
	e.reconcile("a", "orders")
	if c := e.wantReady(e.buckety("a", "orders"), metav1.ConditionFalse, v1.ReasonAccessesNotReady); !strings.Contains(c.Message, "failing") {
		t.Errorf("want the failing access named, got %q", c.Message)
	}
	if got := s.writes["patch bucketies/status"]; got != 1 {
		t.Errorf("a new access that failed: want the Buckety status written once, at once, got %d (writes %s)", got, formatCounts(s.writes))
	}
	time.Sleep(2 * time.Millisecond) // past the access's backoff
	e.reconcileAccess("a", "failing")
	e.reconcile("a", "orders")
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)

	// Silent past Held.For: written then.
	e.br.Held.For = 200 * time.Millisecond
	newAccess("silent")
	res := e.reconcile("a", "orders")
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	if res.RequeueAfter <= 0 || res.RequeueAfter > e.br.Held.For+100*time.Millisecond {
		t.Errorf("want the held pass back when Held.For ends, got requeue after %s", res.RequeueAfter)
	}
	time.Sleep(250 * time.Millisecond)
	e.reconcile("a", "orders") // the access never reconciled
	if c := e.wantReady(e.buckety("a", "orders"), metav1.ConditionFalse, v1.ReasonAccessesNotReady); !strings.Contains(c.Message, "silent") {
		t.Errorf("want the silent access named, got %q", c.Message)
	}
	if got := s.writes["patch bucketies/status"]; got != 1 {
		t.Errorf("past Held.For: want the Buckety status written once, got %d (writes %s)", got, formatCounts(s.writes))
	}
}

// TestAccessesNamedInOrder: the cache lists a Buckety's accesses in no
// fixed order (here, reversed); the Ready message names them sorted, so a
// pass that finds the same accesses writes nothing.
func TestAccessesNamedInOrder(t *testing.T) {
	s := &writeSim{queued: map[simItem]bool{}}
	s.reset()
	reversed := func(c client.WithWatch) (client.Client, client.Reader) {
		wc, r := s.wrap(c)
		return interceptor.NewClient(wc.(client.WithWatch), interceptor.Funcs{
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := c.List(ctx, list, opts...); err != nil {
					return err
				}
				if l, ok := list.(*v1.BucketyAccessList); ok {
					slices.Reverse(l.Items)
				}
				return nil
			},
		}), r
	}
	e := newEnvWith(t, "", reversed)
	e.br.Held.For = time.Nanosecond // no hold: the message is written at once
	e.create(newBuckety("a", "orders", "orders"))
	e.reconcile("a", "orders")
	for _, n := range []string{"alpha", "beta", "gamma"} {
		e.create(&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: n, UID: types.UID("a-" + n + "-uid")},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: n}})
	}
	e.reconcile("a", "orders")
	if c := e.wantReady(e.buckety("a", "orders"), metav1.ConditionFalse, v1.ReasonAccessesNotReady); c.Message != "waiting for access Secrets: alpha, beta, gamma" {
		t.Errorf("want the pending accesses named in order, got %q", c.Message)
	}
	s.reset()
	e.reconcile("a", "orders")
	if got := s.writes["patch bucketies/status"]; got != 0 {
		t.Errorf("a pass that finds the same accesses: want no status write, got %d", got)
	}
}
