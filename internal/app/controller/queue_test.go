package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/Yolean/buckety-controller/internal/controller/queue"
)

// TestControllerHandsOutTheFairQueue: in a controller built with the
// controllers' options (controllerOptions), what an event handler adds
// through queue.AddLater is low-priority work: with the one worker busy,
// a settled item added so, then another namespace's ordinary item, are
// handed out ordinary first. controller-runtime wraps a queue that is not
// a priorityqueue.PriorityQueue in a type of its own, through which
// AddLater added ordinary work, and the settled item went first.
func TestControllerHandsOutTheFairQueue(t *testing.T) {
	nn := func(ns, name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	blocker, settled, changed := nn("team-z", "blocker"), nn("team-a", "settled"), nn("team-b", "changed")
	events := make(chan event.GenericEvent, 2)
	started, release := make(chan struct{}), make(chan struct{})
	order := make(chan string, 3)
	o := Options{SkipNameValidation: true}
	o.MaxConcurrent = 1
	opts := controllerOptions(o)
	opts.Reconciler = reconcile.Func(func(ctx context.Context, r reconcile.Request) (reconcile.Result, error) {
		if r == blocker {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		order <- r.String()
		return reconcile.Result{}, nil
	})
	c, err := ctrlcontroller.NewUnmanaged("fair-queue-test", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(source.Channel(events, handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.Object.GetName() == "start" {
				q.Add(blocker)
				return
			}
			queue.AddLater(q, settled)
			q.Add(changed)
			close(release)
		},
	})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	}()
	send := func(name string) {
		events <- event.GenericEvent{Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name}}}
	}
	send("start")
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the blocker was not reconciled")
	}
	send("more")
	var got []string
	for len(got) < 3 {
		select {
		case r := <-order:
			got = append(got, r)
		case <-time.After(time.Minute):
			t.Fatalf("reconciled %v, want three", got)
		}
	}
	if want := fmt.Sprint([]string{blocker.String(), changed.String(), settled.String()}); fmt.Sprint(got) != want {
		t.Errorf("reconciled in the order %v, want %s: the settled item after the ordinary one", got, want)
	}
}
