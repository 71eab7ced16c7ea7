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
	deadline := time.Now().Add(5 * time.Second)
	for runs.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("want 3 runs within 5s, got %d", runs.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Every did not return after its context ended")
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
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("want a run at once, none within 5s")
	}
}
