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
