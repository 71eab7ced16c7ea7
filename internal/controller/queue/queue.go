// Package queue is the work queue both controllers take their work from:
// client-go's rate-limiting queue, handing waiting work out in turns by
// namespace, so one tenant's burst does not delay every other tenant.
package queue

import (
	"k8s.io/client-go/util/workqueue"
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
// over a namespace round-robin.
func NewFair(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: &roundRobin{}})
	dq := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Queue: q})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, DelayingQueue: dq})
}

// roundRobin is a workqueue.Queue that pops one item per namespace per
// turn. client-go calls it under its queue's lock.
type roundRobin struct {
	// waiting holds each namespace's items in arrival order; a namespace
	// with none is removed, so a namespace that is gone holds no memory.
	waiting map[string]*fifo[reconcile.Request]
	// turns lists the namespaces with items, in the order they get their
	// next turn; each appears once.
	turns fifo[string]
	n     int
}

func (r *roundRobin) Touch(reconcile.Request) {}

func (r *roundRobin) Push(item reconcile.Request) {
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

func (r *roundRobin) Len() int { return r.n }

// Pop takes the next namespace's oldest item; client-go calls it only when
// Len is not 0.
func (r *roundRobin) Pop() reconcile.Request {
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
