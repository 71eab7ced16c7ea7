package buckety

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/queue"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// TestAccessWakes checks when an access's events wake its Bucketies: a new
// access's create after NewAccessWake, an older one's (the cache's start)
// at once; a finalizer-and-slot patch not at all; a status change, a new
// ref and a deletion at once, the old refs too.
func TestAccessWakes(t *testing.T) {
	ctx := context.Background()
	access := func(age time.Duration, refs ...string) *v1.BucketyAccess {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team", ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(time.Now().Add(-age))}}
		for _, r := range refs {
			a.Spec.BucketyRefs = append(a.Spec.BucketyRefs, v1.BucketyReference{Name: r})
		}
		return a
	}
	h := accessWakes()
	queued := func(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
		t.Helper()
		var out []string
		for q.Len() > 0 {
			r, _ := q.Get()
			out = append(out, r.Name)
			q.Done(r)
		}
		return out
	}
	newQueue := func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	}

	t.Run("new access: its Bucketies woken after NewAccessWake", func(t *testing.T) {
		q := newQueue()
		defer q.ShutDown()
		h.Create(ctx, event.CreateEvent{Object: access(time.Second, "x", "y")}, q)
		if got := queued(t, q); len(got) != 0 {
			t.Fatalf("woken at once: %v; want after %s", got, NewAccessWake)
		}
		deadline := time.Now().Add(NewAccessWake + 5*time.Second)
		for q.Len() < 2 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if got := queued(t, q); len(got) != 2 {
			t.Fatalf("after %s: woken %v, want x and y", NewAccessWake, got)
		}
	})
	t.Run("an access from before the start: at once", func(t *testing.T) {
		q := newQueue()
		defer q.ShutDown()
		h.Create(ctx, event.CreateEvent{Object: access(time.Hour, "x")}, q)
		if got := queued(t, q); len(got) != 1 || got[0] != "x" {
			t.Fatalf("woken %v, want x at once", got)
		}
	})
	update := func(t *testing.T, o, n *v1.BucketyAccess) []string {
		t.Helper()
		q := newQueue()
		defer q.ShutDown()
		h.Update(ctx, event.UpdateEvent{ObjectOld: o, ObjectNew: n}, q)
		return queued(t, q)
	}
	t.Run("finalizer and slot label only: none", func(t *testing.T) {
		o := access(time.Second, "x")
		n := o.DeepCopy()
		n.ResourceVersion, n.Finalizers, n.Labels = "2", []string{v1.Finalizer}, map[string]string{shard.SlotLabel: "7"}
		if got := update(t, o, n); len(got) != 0 {
			t.Fatalf("woken %v by the finalizer patch, want none", got)
		}
	})
	t.Run("status: at once", func(t *testing.T) {
		o := access(time.Second, "x")
		n := o.DeepCopy()
		n.ResourceVersion, n.Status.ObservedGeneration = "2", 1
		if got := update(t, o, n); len(got) != 1 {
			t.Fatalf("woken %v by a status change, want x", got)
		}
	})
	t.Run("refs changed: old and new at once", func(t *testing.T) {
		o := access(time.Second, "x")
		n := access(time.Second, "y")
		n.ResourceVersion = "2"
		if got := update(t, o, n); len(got) != 2 {
			t.Fatalf("woken %v, want x and y", got)
		}
	})
	t.Run("deleting: at once, even if only the finalizer goes", func(t *testing.T) {
		o := access(time.Second, "x")
		o.Finalizers = []string{v1.Finalizer}
		now := metav1.Now()
		o.DeletionTimestamp = &now
		n := o.DeepCopy()
		n.ResourceVersion, n.Finalizers = "2", nil
		if got := update(t, o, n); len(got) != 1 {
			t.Fatalf("woken %v, want x", got)
		}
		q := newQueue()
		defer q.ShutDown()
		h.Delete(ctx, event.DeleteEvent{Object: n}, q)
		if got := queued(t, q); len(got) != 1 {
			t.Fatalf("deletion woke %v, want x", got)
		}
	})
}

// TestAccessWakesAtAStart: the initial list's settled accesses queue
// their Bucketies as low-priority work, so another namespace's ordinary
// work added after them is handed out first; an unsettled access's
// Bucketies are ordinary work, handed out in the order they came.
func TestAccessWakesAtAStart(t *testing.T) {
	for _, c := range []struct {
		name    string
		settled bool
		first   string
	}{
		{"settled: its Buckety after the ordinary work", true, "zz/changed"},
		{"not settled: its Buckety in turn", false, "team/x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "team", Generation: 2,
				CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
				Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Name: "x"}}}}
			a.Status.ObservedGeneration = 1
			if c.settled {
				a.Status.ObservedGeneration = 2
			}
			a.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionTrue}}
			q := queue.NewFair("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			accessWakes().Create(context.Background(), event.CreateEvent{Object: a, IsInInitialList: true}, q)
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "zz", Name: "changed"}})
			got, _ := q.Get()
			if got.String() != c.first {
				t.Errorf("handed out first: %s, want %s", got, c.first)
			}
		})
	}
}
