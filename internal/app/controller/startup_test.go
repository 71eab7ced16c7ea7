package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// TestStartupSettledEndsWithTheStartsWork: after the caches synced, a
// start is done when the reconciles reach the objects cached then, even
// with new work queued; or when the queues, once seen holding work, are
// empty twice in a row; or when they never held any for startupQuiet
// checks. A check that cannot be read is work; not synced is not done.
func TestStartupSettledEndsWithTheStartsWork(t *testing.T) {
	fail := errors.New("gather failed")
	unread := startWork{depth: -1}
	tests := []struct {
		name      string
		synced    bool
		objects   int // -1: cannot be counted
		checks    []startWork
		wantDone  bool
		wantCheck int // the check at which it is done
	}{
		{"the start's objects reconciled, new work queued", true, 100, []startWork{{500, 0}, {400, 60}, {300, 100}}, true, 3},
		{"nothing cached: the first check", true, 0, []startWork{{800, 0}}, true, 1},
		{"uncounted: work, then drained", true, -1, []startWork{{0, 0}, {120, 5}, {40, 80}, {3, 117}, {0, 120}, {0, 120}}, true, 6},
		{"uncounted: a check between two bursts does not end it", true, -1, []startWork{{50, 0}, {0, 50}, {7, 50}, {0, 57}, {0, 57}}, true, 5},
		{"a standby: no reconciles, no queues, startupQuiet checks", true, 30, []startWork{{0, 0}}, true, startupQuiet},
		{"unreadable checks are work", true, 0, []startWork{unread}, false, 0},
		{"unreadable, then the objects reconciled", true, 10, []startWork{unread, unread, {5, 10}}, true, 3},
		{"never synced", false, 0, []startWork{{0, 0}}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var checks atomic.Int32
			read := func() (startWork, error) {
				i := int(checks.Add(1)) - 1
				w := tt.checks[min(i, len(tt.checks)-1)]
				if w == unread {
					return startWork{}, fail
				}
				return w, nil
			}
			objects := func(context.Context) (int, error) {
				if tt.objects < 0 {
					return 0, fail
				}
				return tt.objects, nil
			}
			synced := func(ctx context.Context) bool {
				if !tt.synced {
					<-ctx.Done()
				}
				return tt.synced
			}
			// Those not done wait out a short time; those done have
			// all the time a loaded machine may need.
			wait := 300 * time.Millisecond
			if tt.wantDone {
				wait = time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			done := startupSettled(synced, objects, read, 10*time.Millisecond)(ctx)
			if done != tt.wantDone {
				t.Fatalf("want done %v, got %v after %d checks", tt.wantDone, done, checks.Load())
			}
			if done && int(checks.Load()) != tt.wantCheck {
				t.Errorf("want done at check %d, got %d", tt.wantCheck, checks.Load())
			}
		})
	}
}

// TestReadStartWorkReadsControllerRuntimesMetrics: the depth is read
// from the gauge controller-runtime's workqueue metrics provider registers
// for every named queue, summed over queues, and the reconciles from its
// reconcile counter, the Buckety and access controllers' only; nothing
// registered reads as 0.
func TestReadStartWorkReadsControllerRuntimesMetrics(t *testing.T) {
	if w, err := readStartWork(prometheus.NewRegistry()); err != nil || w != (startWork{}) {
		t.Fatalf("nothing registered: want 0, got %v, %v", w, err)
	}
	before, err := readStartWork(ctrlmetrics.Registry)
	if err != nil {
		t.Fatal(err)
	}
	a := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "startup-test-a"})
	b := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "startup-test-b"})
	defer a.ShutDown()
	defer b.ShutDown()
	a.Add("x")
	a.Add("y")
	b.Add("z")
	// controller-runtime's own counter (registering its twin finds it).
	var total *prometheus.CounterVec
	err = ctrlmetrics.Registry.Register(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: reconcilesMetric, Help: "Total number of reconciliations per controller",
	}, []string{"controller", "result"}))
	if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
		total, _ = are.ExistingCollector.(*prometheus.CounterVec)
	}
	if total == nil {
		t.Fatalf("controller-runtime registers no counter %s with labels controller and result (registering one: %v)", reconcilesMetric, err)
	}
	for _, c := range []string{"buckety", "bucketyaccess", "bucketyaccess", "other"} {
		total.WithLabelValues(c, "success").Inc()
	}
	w, err := readStartWork(ctrlmetrics.Registry)
	if err != nil || w.depth != before.depth+3 || w.reconciles != before.reconciles+3 {
		t.Fatalf("want depth %v and reconciles %v, got %+v, %v", before.depth+3, before.reconciles+3, w, err)
	}
	for _, q := range []workqueue.TypedInterface[string]{a, a, b} {
		item, _ := q.Get()
		q.Done(item)
	}
	if w, err := readStartWork(ctrlmetrics.Registry); err != nil || w.depth != before.depth {
		t.Fatalf("drained: want depth %v, got %+v, %v", before.depth, w, err)
	}
}
