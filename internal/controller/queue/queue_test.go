package queue

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// TestRoundRobinTakesTurnsByNamespace: one item per namespace per turn,
// each namespace's items in arrival order, cluster-scoped items as a
// namespace of their own.
func TestRoundRobinTakesTurnsByNamespace(t *testing.T) {
	var r roundRobin
	for i := range 3 {
		r.Push(req("mallory", fmt.Sprint("m", i)))
	}
	r.Push(req("alice", "a0"))
	r.Push(req("", "claim"))
	r.Push(req("alice", "a1"))
	want := []string{"mallory/m0", "alice/a0", "/claim", "mallory/m1", "alice/a1", "mallory/m2"}
	if r.Len() != len(want) {
		t.Fatalf("Len: want %d, got %d", len(want), r.Len())
	}
	for i, w := range want {
		if got := r.Pop().String(); got != w {
			t.Fatalf("pop %d: want %s, got %s", i, w, got)
		}
	}
	if r.Len() != 0 || len(r.now.waiting) != 0 || r.now.turns.len() != 0 {
		t.Errorf("want nothing held when empty, got Len %d, %d namespaces, %d turns", r.Len(), len(r.now.waiting), r.now.turns.len())
	}
}

// TestFairQueueServesAnotherTenantNext: through client-go's queue as the
// controllers build it, a namespace that queued 300 items ahead of another
// namespace's one delays it by one item, and the queue still merges
// duplicates and delays retries.
func TestFairQueueServesAnotherTenantNext(t *testing.T) {
	q := NewFair("", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Second))
	defer q.ShutDown()
	for i := range 300 {
		q.Add(req("mallory", fmt.Sprint("junk-", i)))
	}
	q.Add(req("mallory", "junk-0")) // merged with the one waiting
	q.Add(req("alice", "ledger"))
	if q.Len() != 301 {
		t.Fatalf("Len: want 301, got %d", q.Len())
	}
	var got []string
	for range 3 {
		item, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		got = append(got, item.String())
		q.Done(item)
	}
	if got[0] != "mallory/junk-0" || got[1] != "alice/ledger" || got[2] != "mallory/junk-1" {
		t.Fatalf("want mallory/junk-0, alice/ledger, mallory/junk-1, got %v", got)
	}
	q.AddRateLimited(req("bob", "retry"))
	for q.Len() > 0 {
		item, _ := q.Get()
		if item.Namespace == "bob" {
			t.Fatal("a rate-limited retry came out before its delay, ahead of waiting work")
		}
		q.Done(item)
	}
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if item, _ := q.Get(); item.String() != "bob/retry" {
		t.Fatalf("want the retry after its delay, got %s", item)
	}
}

// TestLaterWorkWaitsForOrdinaryWork: through client-go's queue as the
// controllers build it, 300 low-priority items (a shard's settled
// Bucketies at takeover) are served after the ordinary work added after
// them, in turns by namespace; a low-priority item added again the
// ordinary way (a tenant's change) is served with the ordinary work; one
// added as low-priority while a worker has it leaves no mark behind.
func TestLaterWorkWaitsForOrdinaryWork(t *testing.T) {
	q := NewFair("", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Second))
	defer q.ShutDown()
	for i := range 150 {
		AddLater(q, req("team-a", fmt.Sprint("settled-", i)))
		AddLater(q, req("team-b", fmt.Sprint("settled-", i)))
	}
	q.Add(req("team-c", "new"))
	q.Add(req("team-a", "settled-77"))       // changed meanwhile: ordinary now
	AddLater(q, req("team-a", "settled-77")) // and stays ordinary
	q.Add(req("team-b", "changed"))
	if q.Len() != 302 {
		t.Fatalf("Len: want 302, got %d", q.Len())
	}
	get := func() reconcile.Request {
		t.Helper()
		item, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		q.Done(item)
		return item
	}
	var got []string
	for range 5 {
		got = append(got, get().String())
	}
	want := []string{"team-c/new", "team-a/settled-77", "team-b/changed", "team-a/settled-0", "team-b/settled-0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("want %v, got %v", want, got)
	}
	seen := map[string]bool{}
	for q.Len() > 0 {
		item := get()
		if item.String() == "team-a/settled-77" || seen[item.String()] {
			t.Fatalf("%s handed out twice", item)
		}
		seen[item.String()] = true
	}
	if len(seen) != 297 {
		t.Fatalf("want the other 297 low-priority items, got %d", len(seen))
	}

	// Added as low-priority while a worker has it: client-go queues it
	// again at Done, by then as ordinary work (erring towards serving it),
	// and no mark stays behind to make a later ordinary add low.
	busy := req("team-a", "busy")
	q.Add(busy)
	item, _ := q.Get()
	AddLater(q, item)
	q.Done(item)
	if item, _ := q.Get(); item != busy {
		t.Fatalf("want %s again, got %s", busy, item)
	}
	AddLater(q, req("team-z", "low"))
	q.Done(busy)
	q.Add(busy)
	if item := get(); item != busy {
		t.Fatalf("an ordinary add after a low-priority add of a busy item: want it before low work, got %s", item)
	}
	if item := get(); item.String() != "team-z/low" {
		t.Fatalf("want team-z/low last, got %s", item)
	}
	if n := len(q.(*fair).rr.marked); n != 0 {
		t.Fatalf("want no marks left, got %d", n)
	}
}

// TestFifoStaysCompact: against a plain slice, under random pushes and
// pops, the fifo returns the same order and its array stays within twice
// what it holds (plus a small floor).
func TestFifoStaysCompact(t *testing.T) {
	var f fifo[int]
	var ref []int
	rng := rand.New(rand.NewPCG(1, 2))
	next := 0
	for step := range 200000 {
		if rng.IntN(3) < 2 || len(ref) == 0 {
			f.push(next)
			ref = append(ref, next)
			next++
		} else {
			got := f.pop()
			if got != ref[0] {
				t.Fatalf("step %d: want %d, got %d", step, ref[0], got)
			}
			ref = ref[1:]
		}
		if f.len() != len(ref) {
			t.Fatalf("step %d: len want %d, got %d", step, len(ref), f.len())
		}
		if len(f.items) > 2*f.len()+64 {
			t.Fatalf("step %d: array holds %d for %d items", step, len(f.items), f.len())
		}
	}
}

var _ workqueue.Queue[reconcile.Request] = &roundRobin{}

// TestStatsCountWaitingAndFinishedWork: Stats counts the items waiting in
// the fair queues (an item added twice once, a low-priority item made
// ordinary once) and the items workers finished; a queue shut down no
// longer counts.
func TestStatsCountWaitingAndFinishedWork(t *testing.T) {
	w0, d0 := Stats()
	q := NewFair("stats-test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	q.Add(req("a", "1"))
	q.Add(req("a", "1"))
	q.Add(req("b", "2"))
	AddLater(q, req("c", "3"))
	q.Add(req("c", "3")) // made ordinary: still one item
	if w, d := Stats(); w-w0 != 3 || d != d0 {
		t.Fatalf("want 3 waiting and none finished, got %d and %d", w-w0, d-d0)
	}
	for range 2 {
		item, _ := q.Get()
		q.Done(item)
	}
	if w, d := Stats(); w-w0 != 1 || d-d0 != 2 {
		t.Fatalf("want 1 waiting and 2 finished, got %d and %d", w-w0, d-d0)
	}
	q.ShutDown()
	if w, d := Stats(); w != w0 || d-d0 != 2 {
		t.Fatalf("shut down: want its waiting item uncounted and 2 finished, got %d and %d", w-w0, d-d0)
	}
}

// TestAddWithOpts: what controller-runtime adds through the
// priorityqueue.PriorityQueue methods is what its own wrapper makes of
// it: a delayed add waits, an ordinary one is handed out, at
// controller-runtime's low priority too; an add at laterPriority (AddLater
// through a handler's wrapper) is low-priority work.
func TestAddWithOpts(t *testing.T) {
	q := NewFair("", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Hour, time.Hour)).(*fair)
	defer q.ShutDown()
	low := -100
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour}, req("team-a", "later"))
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req("team-a", "retry"))
	if q.Len() != 0 {
		t.Fatalf("delayed adds: want nothing waiting yet, got %d", q.Len())
	}
	later := laterPriority
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &later}, req("team-a", "settled"))
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, req("team-b", "changed"))
	if q.Len() != 2 {
		t.Fatalf("want 2 waiting, got %d", q.Len())
	}
	for _, want := range []string{"team-b/changed", "team-a/settled"} {
		item, priority, shutdown := q.GetWithPriority()
		if shutdown || item.String() != want || priority != 0 {
			t.Fatalf("want %s at priority 0, got %s at %d (shut down %v)", want, item, priority, shutdown)
		}
		q.Done(item)
	}
}
