package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var _ manager.LeaderElectionRunnable = LeaderOnly{}

// TestEvery: a run at once, then one per interval, and Every returns once
// the context ends.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, 20*time.Millisecond, func(context.Context) { runs.Add(1) })
	}()
	// A backstop that ends a hung test, not a speed goal: three runs
	// take 40 ms on an idle machine.
	deadline := time.Now().Add(time.Minute)
	for runs.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("want 3 runs of a 20ms interval, got %d after a minute", runs.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Every did not return after its context ended (waited a minute)")
	}
	if !(LeaderOnly{}).NeedLeaderElection() {
		t.Error("LeaderOnly: want leader election")
	}
}

// TestEveryFirstRunAtOnce: the first run does not wait for an interval.
func TestEveryFirstRunAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan struct{}, 1)
	go Every(ctx, time.Hour, func(context.Context) {
		select {
		case ran <- struct{}{}:
		default:
		}
	})
	// At once, not after the interval (an hour): a minute tells them
	// apart on any machine.
	select {
	case <-ran:
	case <-time.After(time.Minute):
		t.Fatal("want a run at once, none within a minute of an hour's interval")
	}
}
