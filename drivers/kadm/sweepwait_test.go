package kadm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestEnsureWaitingForTheSweepKeepsItsDeadline: at start-up every
// Buckety's first pass (an Ensure with MaxAge) runs beside the first drift
// sweep, which reads the topics' configs in chunks, and a pass waits for
// the chunk holding its topic. The wait ran on the Ensure's one request
// deadline: with each chunk answered in 1.5 s against a 5 s timeout (every
// request in time), a topic in the last of five chunks spent the whole
// deadline waiting and failed as unreachable (three such failures in a row
// trip the backend's breaker). The wait now has its own timeout, and a
// pass whose wait was cut short reads its topic with a deadline of its
// own: it succeeds.
func TestEnsureWaitingForTheSweepKeepsItsDeadline(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := &Config{SeedBrokers: c.ListenAddrs(), ClientID: "t", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	opts, err := cfg.clientOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	be := newBackend("kafka", cfg, cl, 5*time.Millisecond, 2) // chunks of 4 topics
	defer be.Close()
	ctx := context.Background()
	var rs []drivers.Resource
	for i := range 20 {
		r := drivers.Resource{Name: fmt.Sprintf("t%02d", i), Parameters: map[string]string{"partitions": "1"}}
		if _, err := be.Ensure(ctx, r); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	be.observed.clear()
	c.ControlKey(kmsg.DescribeConfigs.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { time.Sleep(1500 * time.Millisecond) })
		return nil, nil, false
	})
	swept := make(chan error, 1)
	go func() {
		_, err := be.Sweep(ctx, rs)
		swept <- err
	}()
	// The sweep in flight before the pass asks.
	for deadline := time.Now().Add(10 * time.Second); ; {
		be.observed.mu.Lock()
		n := len(be.observed.sweeps)
		be.observed.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweep never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	last := rs[len(rs)-1]
	last.MaxAge = time.Minute
	if _, err := be.Ensure(ctx, last); err != nil {
		t.Errorf("a pass whose topic is in the sweep's last chunk, on a broker answering every request in time: want it to succeed, got %v (unavailable %v)", err, drivers.IsUnavailable(err))
	}
	if err := <-swept; err != nil {
		t.Errorf("the sweep: %v", err)
	}
}
