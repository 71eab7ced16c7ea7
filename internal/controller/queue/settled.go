package queue

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Settled objects at a start. A replica that starts, or takes a shard
// over, lists every object it serves, and each comes as a create event.
// Most are settled: Ready for their current generation, needing a
// re-check and nothing else. A change a tenant made while no replica
// served them (a killed shard leader's, a rollout's) is among them, and
// queued in the list's order it waits for thousands of re-checks. The
// pair SettledLater returns queues the initial list's settled objects as
// low-priority work (AddLater) instead: every one is still re-checked,
// after the work that needs doing.

// SettledLater returns For's predicate, which lets every event through
// but the initial list's settled objects, and the handler to watch the
// same kind with, which queues exactly those through AddLater. settled
// judges an object; it is asked only about the initial list's.
func SettledLater(settled func(client.Object) bool) (predicate.Predicate, handler.EventHandler) {
	later := func(e event.CreateEvent) bool { return e.IsInInitialList && settled(e.Object) }
	return predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool { return !later(e) }},
		handler.Funcs{CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if later(e) {
				AddLater(q, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)})
			}
		}}
}

// LaterAtStart wraps h, a handler of another kind's events that queues
// this controller's objects (an access's Secret queues the access, a
// Buckety its accesses), so the initial list does not undo SettledLater:
// every object of the watched kind comes as a create event at a start,
// and each queued as ordinary work would make the settled objects it
// names ordinary again, behind which a changed object waits as before.
// The initial list's create events of objects that settled judges
// settled (every one, when settled is nil) queue what h queues as
// low-priority work (AddLater), which never demotes an item already
// waiting as ordinary: the objects that need a pass still get it first,
// through their own kind's events. Every other event is h's as before.
func LaterAtStart(h handler.EventHandler, settled func(client.Object) bool) handler.EventHandler {
	return laterAtStart{EventHandler: h, settled: settled}
}

type laterAtStart struct {
	handler.EventHandler
	settled func(client.Object) bool
}

func (l laterAtStart) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.IsInInitialList && (l.settled == nil || l.settled(e.Object)) {
		q = laterQueue{q}
	}
	l.EventHandler.Create(ctx, e, q)
}

// laterQueue adds as low-priority work (AddLater) what is added to it
// at once; a delayed add is the queue's own.
type laterQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func (q laterQueue) Add(item reconcile.Request) { AddLater(q.TypedRateLimitingInterface, item) }
