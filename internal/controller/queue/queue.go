// Package queue is the work queue both controllers take their work from:
// client-go's rate-limiting queue, handing waiting work out in turns by
// namespace, so one tenant's burst does not delay every other tenant.
package queue

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Fair work queues. Both controllers take their work from one queue each,
// which client-go keeps first in, first out: a tenant who creates a
// thousand Bucketies at once puts a thousand passes ahead of every other
// tenant's next one, and another namespace's new Buckety waits for all of
// them. The queues here hand work out in turns by namespace instead: each
// namespace with work waiting gets one item per turn, in the order its
// items arrived, so another tenant's pass waits for at most one item of
// each busy namespace. Cluster-scoped items (namespace "") take their turn
// as one more namespace. Nothing else changes: client-go's queue still
// merges an item added twice, keeps an item out while a worker has it,
// delays and rate-limits retries, and counts the queue's metrics; only the
// order it pops waiting items in is ours.

// NewFair is controller.Options.NewQueue: client-go's rate-limiting queue
// over a namespace round-robin. The queue it returns is also a Later, and
// a priorityqueue.PriorityQueue, so a controller hands it to its event
// handlers as it is (AddWithOpts).
func NewFair(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	rr := &roundRobin{}
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: rr})
	dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Queue: q})
	live.Store(rr, struct{}{})
	return &fair{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, DelayingQueue: dq}),
		rr:                         rr,
	}
}

// The work of this process's queues, for the end of a start (the
// controller's memory.StartupGC): how many items wait in the queues not
// shut down, and how many items workers have finished (one per
// reconcile) since the process started.
var (
	live     sync.Map // *roundRobin of each queue not shut down
	finished atomic.Int64
)

// Stats returns the items waiting in this process's fair queues that are
// not shut down (delayed retries not yet due are not waiting), and the
// items their workers have finished since the process started.
func Stats() (waiting, done int64) {
	live.Range(func(k, _ any) bool {
		waiting += k.(*roundRobin).waiting.Load()
		return true
	})
	return waiting, finished.Load()
}

// Later is work of low priority: the re-checks of objects that need
// nothing but a re-check. A replica that starts, or takes a shard over,
// lists thousands of settled objects; queued as any other work, they put
// a change a tenant made meanwhile behind all of them. Added through
// AddLater, an item is handed out only when no other item waits (the
// low items, too, in turns by namespace); added again the usual way while
// it waits, it is served as any other item.
type Later interface {
	AddLater(item reconcile.Request)
}

// AddLater adds item to q as low-priority work when q is a Later (the
// queues NewFair builds) or a priorityqueue.PriorityQueue over one, and as
// any other work when it is not. controller-runtime's handlers wrap the
// queue they are given in a PriorityQueue of their own (handler.Funcs
// does, for a create or an update, to set its default priority), which
// passes an add's priority on: so AddLater adds through it at
// laterPriority, which the fair queue takes for AddLater.
func AddLater(q workqueue.TypedRateLimitingInterface[reconcile.Request], item reconcile.Request) {
	switch l := q.(type) {
	case Later:
		l.AddLater(item)
	case priorityqueue.PriorityQueue[reconcile.Request]:
		p := laterPriority
		l.AddWithOpts(priorityqueue.AddOpts{Priority: &p}, item)
	default:
		q.Add(item)
	}
}

// laterPriority is the priority AddLater adds at through a
// controller-runtime PriorityQueue: none of controller-runtime's own
// (0, and handler.LowPriority, -100, for every create of an initial list,
// settled or not).
const laterPriority = -1 << 20

var _ priorityqueue.PriorityQueue[reconcile.Request] = (*fair)(nil)

type fair struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	rr *roundRobin
}

// AddWithOpts and GetWithPriority make the queue a
// priorityqueue.PriorityQueue, which controller-runtime hands to the
// controller's event handlers as it is: any other queue it wraps in a
// type of its own, whose methods are the rate-limiting queue's alone, so
// a handler's AddLater found no Later and added ordinary work, and the
// low-priority class was never used in a running controller
// (TestControllerHandsOutTheFairQueue). The adds are what
// controller-runtime's wrapper makes of them: a rate-limited add, a
// delayed one, or an ordinary one; and an add at laterPriority (AddLater
// through a handler's wrapper) is AddLater. Other priorities are not
// used: controller-runtime's handlers mark every create of an initial
// list low, settled or not, where this queue's low class is for the
// settled objects alone (SettledLater, LaterAtStart).
func (f *fair) AddWithOpts(opts priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, item := range items {
		switch {
		case opts.RateLimited:
			f.AddRateLimited(item)
		case opts.After > 0:
			f.AddAfter(item, opts.After)
		case opts.Priority != nil && *opts.Priority == laterPriority:
			f.AddLater(item)
		default:
			f.Add(item)
		}
	}
}

// GetWithPriority is Get, every item of priority 0.
func (f *fair) GetWithPriority() (reconcile.Request, int, bool) {
	item, shutdown := f.Get()
	return item, 0, shutdown
}

// Done is client-go's, counted for Stats.
func (f *fair) Done(item reconcile.Request) {
	f.TypedRateLimitingInterface.Done(item)
	finished.Add(1)
}

// ShutDown and ShutDownWithDrain are client-go's; the queue's items no
// longer count as waiting (Stats).
func (f *fair) ShutDown() {
	f.TypedRateLimitingInterface.ShutDown()
	live.Delete(f.rr)
}

func (f *fair) ShutDownWithDrain() {
	f.TypedRateLimitingInterface.ShutDownWithDrain()
	live.Delete(f.rr)
}

// AddLater marks item as low-priority work for the Push or Touch that its
// Add makes (under client-go's lock), and takes the mark back after: an
// Add that neither pushes nor touches (the item is being processed, or
// the queue shuts down) leaves none behind. Another goroutine's ordinary
// Add of the same item in between is taken for low-priority work too; it
// is still served, after the ordinary work.
func (f *fair) AddLater(item reconcile.Request) {
	f.rr.mark(item, true)
	f.Add(item)
	f.rr.mark(item, false)
}

// roundRobin is a workqueue.Queue that pops one item per namespace per
// turn, from the ordinary items while any waits and from the low-priority
// ones after. client-go calls Push, Touch, Len and Pop under its queue's
// lock; the marks have a lock of their own, taken under client-go's, never
// around it.
type roundRobin struct {
	now   rotation
	later rotation
	// low holds the items waiting in later that are still low-priority;
	// an entry of later not in low was promoted (Touch) and is skipped.
	low map[reconcile.Request]struct{}

	mu     sync.Mutex
	marked map[reconcile.Request]int

	// waiting is Len, for Stats to read without client-go's lock.
	waiting atomic.Int64
}

func (r *roundRobin) mark(item reconcile.Request, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.marked == nil {
		r.marked = map[reconcile.Request]int{}
	}
	if on {
		r.marked[item]++
	} else if r.marked[item]--; r.marked[item] <= 0 {
		delete(r.marked, item)
	}
}

func (r *roundRobin) isMarked(item reconcile.Request) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.marked[item] > 0
}

// Touch: an item added again while it waits. An ordinary add of a
// low-priority item makes it ordinary, in its namespace's turn from now.
func (r *roundRobin) Touch(item reconcile.Request) {
	if _, ok := r.low[item]; !ok || r.isMarked(item) {
		return
	}
	delete(r.low, item)
	r.now.push(item)
}

func (r *roundRobin) Push(item reconcile.Request) {
	r.waiting.Add(1)
	if r.isMarked(item) {
		if r.low == nil {
			r.low = map[reconcile.Request]struct{}{}
		}
		r.low[item] = struct{}{}
		r.later.push(item)
		return
	}
	r.now.push(item)
}

func (r *roundRobin) Len() int { return r.now.n + len(r.low) }

// Pop takes the next namespace's oldest ordinary item, or when none waits
// the next namespace's oldest low-priority one; client-go calls it only
// when Len is not 0.
func (r *roundRobin) Pop() reconcile.Request {
	r.waiting.Add(-1)
	if r.now.n > 0 {
		return r.now.pop()
	}
	for {
		item := r.later.pop()
		if _, ok := r.low[item]; ok {
			delete(r.low, item)
			return item
		}
	}
}

// rotation holds items by namespace and pops one namespace's oldest per
// turn.
type rotation struct {
	// waiting holds each namespace's items in arrival order; a namespace
	// with none is removed, so a namespace that is gone holds no memory.
	waiting map[string]*fifo[reconcile.Request]
	// turns lists the namespaces with items, in the order they get their
	// next turn; each appears once.
	turns fifo[string]
	n     int
}

func (r *rotation) push(item reconcile.Request) {
	if r.waiting == nil {
		r.waiting = map[string]*fifo[reconcile.Request]{}
	}
	q, ok := r.waiting[item.Namespace]
	if !ok {
		q = &fifo[reconcile.Request]{}
		r.waiting[item.Namespace] = q
		r.turns.push(item.Namespace)
	}
	q.push(item)
	r.n++
}

func (r *rotation) pop() reconcile.Request {
	ns := r.turns.pop()
	q := r.waiting[ns]
	item := q.pop()
	if q.len() == 0 {
		delete(r.waiting, ns)
	} else {
		r.turns.push(ns)
	}
	r.n--
	return item
}

// fifo is a slice queue that lets go of what it popped.
type fifo[T any] struct {
	items []T
	head  int
}

func (f *fifo[T]) push(v T) { f.items = append(f.items, v) }

func (f *fifo[T]) len() int { return len(f.items) - f.head }

func (f *fifo[T]) pop() T {
	v := f.items[f.head]
	var zero T
	f.items[f.head] = zero
	f.head++
	// Reuse the array once it is empty, and compact it once the popped
	// half outweighs the rest, so it stays within twice what it holds.
	if f.head == len(f.items) {
		f.items, f.head = f.items[:0], 0
	} else if f.head > len(f.items)/2 && f.head >= 64 {
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return v
}
