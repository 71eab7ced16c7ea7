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

// TestIssuingCacheWaitEndsWithItsContext: while one caller's probe hangs
// on its backend, another caller whose context bounds its wait (the
// start-up Secret read) gets its context's error when it ends, not the
// probe's end; the probe's own answer then serves the next caller.
func TestIssuingCacheWaitEndsWithItsContext(t *testing.T) {
	var c IssuingCache
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(context.Background(), time.Minute, func(context.Context) (Issuing, error) {
			close(started)
			<-release
			return Issuing{PerAccess: true}, nil
		})
		done <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Get(ctx, time.Minute, func(context.Context) (Issuing, error) {
		t.Error("a second probe while the first runs")
		return Issuing{}, nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the waiter's own deadline, got %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(context.Background(), time.Minute, func(context.Context) (Issuing, error) {
		t.Error("probed again within the TTL")
		return Issuing{}, nil
	})
	if err != nil || !got.PerAccess {
		t.Fatalf("want the first probe's answer, got %+v, %v", got, err)
	}
}
