package queue

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestSettledLater: of the create events, only the initial list's settled
// objects are kept from For's handler and queued as low-priority work;
// every other create goes through For's handler, and the pair's handler
// queues nothing for it. The pair's handler is a handler.Funcs, which
// hands its function the fair queue (a PriorityQueue) wrapped in one of
// controller-runtime's: AddLater goes through it (laterPriority).
func TestSettledLater(t *testing.T) {
	judge := func(o client.Object) bool { return o.GetLabels()["settled"] == "yes" }
	notSettled, settledLater := SettledLater(judge)
	obj := func(name, settled string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: map[string]string{"settled": settled}}}
	}
	for _, c := range []struct {
		name    string
		o       client.Object
		initial bool
		later   bool
	}{
		{"settled, initial list", obj("a", "yes"), true, true},
		{"not settled, initial list", obj("b", "no"), true, false},
		{"settled, created after the start", obj("c", "yes"), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := event.CreateEvent{Object: c.o, IsInInitialList: c.initial}
			if got := notSettled.Create(e); got == c.later {
				t.Errorf("For's predicate lets it through: %v, want %v", got, !c.later)
			}
			q := NewFair("", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Second))
			defer q.ShutDown()
			settledLater.Create(context.Background(), e, q)
			if got := q.Len() == 1; got != c.later {
				t.Fatalf("the pair's handler queued it: %v, want %v", got, c.later)
			}
			if got := len(q.(*fair).rr.low) == 1; got != c.later {
				t.Errorf("queued as low-priority work: %v, want %v", got, c.later)
			}
			if !notSettled.Update(event.UpdateEvent{ObjectOld: c.o, ObjectNew: c.o}) || !notSettled.Delete(event.DeleteEvent{Object: c.o}) {
				t.Error("For's predicate must let updates and deletes through")
			}
		})
	}
}

// TestLaterAtStart: a handler of another kind's events, wrapped, queues
// what the initial list's settled objects name as low-priority work; an
// unsettled one's, a later create's and an update's as ordinary work;
// and an item already waiting as ordinary work stays ordinary.
func TestLaterAtStart(t *testing.T) {
	judge := func(o client.Object) bool { return o.GetLabels()["settled"] == "yes" }
	names := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "team", Name: "named-by-" + o.GetName()}}}
	})
	obj := func(name, settled string) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: map[string]string{"settled": settled}}}
	}
	for _, c := range []struct {
		name  string
		h     handler.EventHandler
		send  func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request])
		later bool
	}{
		{"settled, initial list", LaterAtStart(names, judge), func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: obj("a", "yes"), IsInInitialList: true}, q)
		}, true},
		{"no judge, initial list", LaterAtStart(names, nil), func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: obj("a", "no"), IsInInitialList: true}, q)
		}, true},
		{"not settled, initial list", LaterAtStart(names, judge), func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: obj("a", "no"), IsInInitialList: true}, q)
		}, false},
		{"settled, created after the start", LaterAtStart(names, judge), func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: obj("a", "yes")}, q)
		}, false},
		{"settled, updated", LaterAtStart(names, judge), func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: obj("a", "yes"), ObjectNew: obj("a", "yes")}, q)
		}, false},
		{"settled, initial list, the item already ordinary", LaterAtStart(names, judge), func(h handler.EventHandler, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "named-by-a"}})
			h.Create(context.Background(), event.CreateEvent{Object: obj("a", "yes"), IsInInitialList: true}, q)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := NewFair("", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Second))
			defer q.ShutDown()
			c.send(c.h, q)
			if q.Len() != 1 {
				t.Fatalf("want the named item queued once, got %d items", q.Len())
			}
			if got := len(q.(*fair).rr.low) == 1; got != c.later {
				t.Errorf("queued as low-priority work: %v, want %v", got, c.later)
			}
		})
	}
}
