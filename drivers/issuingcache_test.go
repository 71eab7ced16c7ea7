package drivers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestIssuingCacheFailureAnswersTheQueue: passes queued behind the probe
// of a backend that hangs get its error when it ends, not a probe each
// (each up to the request timeout); the backend is asked again after
// FailTTL, and a success is kept for the TTL.
func TestIssuingCacheFailureAnswersTheQueue(t *testing.T) {
	c := &IssuingCache{FailTTL: 300 * time.Millisecond}
	var probes atomic.Int32
	hung := errors.New("backend hung")
	failing := func(context.Context) (Issuing, error) {
		probes.Add(1)
		time.Sleep(200 * time.Millisecond)
		return Issuing{}, hung
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Get(context.Background(), time.Minute, failing); !errors.Is(err, hung) {
				t.Errorf("want the probe's error, got %v", err)
			}
		}()
	}
	wg.Wait()
	if n := probes.Load(); n != 1 {
		t.Errorf("16 passes at once on a hung backend: want 1 probe, got %d", n)
	}
	// One probe answered all 16 (counted above); the time is a figure.
	t.Logf("16 passes at once on a hung backend answered after %s", time.Since(start).Round(time.Millisecond))

	time.Sleep(350 * time.Millisecond) // past FailTTL
	ok := func(context.Context) (Issuing, error) { probes.Add(1); return Issuing{PerAccess: true}, nil }
	for range 3 {
		if got, err := c.Get(context.Background(), time.Minute, ok); err != nil || !got.PerAccess {
			t.Errorf("after FailTTL, the backend back: want Scoped, got %+v %v", got, err)
		}
	}
	if n := probes.Load(); n != 2 {
		t.Errorf("after FailTTL: want one more probe, then the answer kept; got %d probes in all", n)
	}

	// A caller's own end is not the backend's failure: not kept.
	c2 := &IssuingCache{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c2.Get(ctx, time.Minute, func(ctx context.Context) (Issuing, error) { return Issuing{}, ctx.Err() }); err == nil {
		t.Fatal("want the cancelled probe's error")
	}
	if got, err := c2.Get(context.Background(), time.Minute, ok); err != nil || !got.PerAccess {
		t.Errorf("after a caller's cancelled probe: want the next caller to probe, got %+v %v", got, err)
	}
}
