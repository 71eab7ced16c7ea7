package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestStartupSettledEndsWithTheStartsWork: after the caches synced, a
// start is done when the reconciles reach the objects cached then, even
// with new work queued; or when the queues, once seen holding work, are
// empty twice in a row; or when they never held any for startupQuiet
// checks. Objects that cannot be counted leave the queues' rule; not
// synced is not done.
func TestStartupSettledEndsWithTheStartsWork(t *testing.T) {
	fail := errors.New("list failed")
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
		{"uncounted, work never drained", true, -1, []startWork{{3, 0}, {0, 3}, {2, 3}}, false, 0},
		{"never synced", false, 0, []startWork{{0, 0}}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var checks atomic.Int32
			read := func() startWork {
				i := int(checks.Add(1)) - 1
				return tt.checks[min(i, len(tt.checks)-1)]
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

// TestStartWorkCountsTheControllersQueues: the queues both controllers
// are given (controllerOptions) are the ones a start's checks count.
func TestStartWorkCountsTheControllersQueues(t *testing.T) {
	before := readStartWork()
	q := controllerOptions(Options{}).NewQueue("start-work-test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "a", Name: "1"}})
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "b", Name: "2"}})
	item, _ := q.Get()
	q.Done(item)
	if w := readStartWork(); w.depth-before.depth != 1 || w.reconciles-before.reconciles != 1 {
		t.Fatalf("want 1 waiting and 1 reconciled, got %+v against %+v before", w, before)
	}
}
