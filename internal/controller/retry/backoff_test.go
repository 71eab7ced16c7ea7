package retry

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestBackoff(t *testing.T) {
	var b Backoff
	want := []time.Duration{1, 2, 4, 8, 16, 20, 20}
	for i, w := range want {
		if got := b.Next("a", Transient); got != w*time.Second {
			t.Errorf("transient failure %d: want %s, got %s", i+1, w*time.Second, got)
		}
	}
	if got := b.Next("b", Permanent); got != 5*time.Second {
		t.Errorf("first permanent failure of another object: want 5s, got %s", got)
	}
	for range 10 {
		b.Next("b", Permanent)
	}
	if got := b.Next("b", Permanent); got != 2*time.Minute {
		t.Errorf("permanent cap: want 2m, got %s", got)
	}
	b.Reset("a")
	if got := b.Next("a", Transient); got != time.Second {
		t.Errorf("after reset: want 1s, got %s", got)
	}
}

// TestBackoffDropsStaleCounts: the count of an object that stopped failing
// without a reset (deleted with its finalizer removed by hand) is dropped
// once stale, so a create-fail-delete loop does not grow the map; an
// object still failing keeps its count.
func TestBackoffDropsStaleCounts(t *testing.T) {
	clock := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	b := Backoff{now: func() time.Time { return clock }}
	for i := range 1000 {
		b.Next(types.UID(fmt.Sprintf("gone-%d", i)), Permanent)
	}
	for range 3 {
		b.Next("failing", Transient)
	}
	clock = clock.Add(StaleAfter - time.Minute)
	if got := b.Next("failing", Transient); got != 8*time.Second {
		t.Errorf("fourth failure of an object still failing: want 8s, got %s", got)
	}
	clock = clock.Add(2 * time.Minute) // the 1000 are stale now, "failing" is not
	if got := b.Next("failing", Transient); got != 16*time.Second {
		t.Errorf("fifth failure: want its count kept (16s), got %s", got)
	}
	b.mu.Lock()
	n := len(b.failures)
	b.mu.Unlock()
	if n != 1 {
		t.Errorf("after the stale counts were dropped: want 1 object counted, got %d", n)
	}
}
