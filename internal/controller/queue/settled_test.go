package queue

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestSettledLater: of the create events, only the initial list's settled
// objects are kept from For's handler and queued as low-priority work;
// every other create goes through For's handler, and the pair's handler
// queues nothing for it.
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
