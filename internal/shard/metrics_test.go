package shard_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/Yolean/buckety-controller/internal/shard"
)

// TestMetricsFollowTheShards: a replica of two shards says what it holds
// and what happened to it. Holding both: buckety_shard_held 1 for shards
// 0 and 1, buckety_shards 2, one replica counted, two takes. Cut off from
// the API server: its counts fail (buckety_shard_count_failures_total),
// it loses both shards by the renew deadline and their held series go.
// Back: it takes both again. Stopped: it releases both, no held series.
func TestMetricsFollowTheShards(t *testing.T) {
	base := leaseClient(t)
	var off atomic.Bool
	c := failingClient(base, func() error {
		if off.Load() {
			return errors.New("cut off from the API server")
		}
		return nil
	})
	tr := &tracker{t: t, running: map[int]string{}}
	a := &shard.Assigner{
		Client: c, Namespace: "default", Name: "buckety-controller.buckety.yolean.se", Identity: "a", Shards: 2,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond,
		Run: tr.run("a"), Log: zap.New(zap.UseDevMode(true)).WithName("a"),
	}
	taken, released, lost, failed := eventCount(t, shard.EventTaken), eventCount(t, shard.EventReleased), eventCount(t, shard.EventLost), counterValue(t, shard.CountFailures)
	until := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 60s; held series %v, running %v", what, heldSeries(t), tr.counts("a"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	r := startReplica(a)
	stopped := false
	defer func() {
		if !stopped {
			r.stop(t)
		}
	}()

	until("both shards held", func() bool { return fmt.Sprint(tr.counts("a")) == "[2]" && fmt.Sprint(heldSeries(t)) == "[0 1]" })
	if got := gaugeValue(t, shard.ShardsGauge); got != 2 {
		t.Errorf("buckety_shards: want 2, got %v", got)
	}
	if got := gaugeValue(t, shard.ReplicasGauge); got != 1 {
		t.Errorf("buckety_shard_replicas: want 1, got %v", got)
	}
	if got := eventCount(t, shard.EventTaken) - taken; got != 2 {
		t.Errorf("buckety_shard_events_total{event=taken}: want 2 more, got %v", got)
	}

	off.Store(true)
	until("both shards lost", func() bool { return fmt.Sprint(tr.counts("a")) == "[0]" && len(heldSeries(t)) == 0 })
	if got := eventCount(t, shard.EventLost) - lost; got != 2 {
		t.Errorf("buckety_shard_events_total{event=lost}: want 2 more, got %v", got)
	}
	if got := counterValue(t, shard.CountFailures) - failed; got < 1 {
		t.Errorf("buckety_shard_count_failures_total: want it to grow while cut off, got %v more", got)
	}

	off.Store(false)
	until("both shards held again", func() bool { return fmt.Sprint(heldSeries(t)) == "[0 1]" })
	r.stop(t)
	stopped = true
	if got := heldSeries(t); len(got) != 0 {
		t.Errorf("buckety_shard_held after the stop: want no series, got shards %v", got)
	}
	if got := eventCount(t, shard.EventReleased) - released; got != 2 {
		t.Errorf("buckety_shard_events_total{event=released}: want 2 more, got %v", got)
	}
	if got := eventCount(t, shard.EventTaken) - taken; got != 4 {
		t.Errorf("buckety_shard_events_total{event=taken}: want 4 more in all, got %v", got)
	}
}

// heldSeries are the shards buckety_shard_held has a series of, sorted.
func heldSeries(t *testing.T) []string {
	t.Helper()
	ch := make(chan prometheus.Metric, shard.Slots)
	shard.HeldGauge.Collect(ch)
	close(ch)
	var out []string
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "shard" && d.GetGauge().GetValue() == 1 {
				out = append(out, l.GetValue())
			}
		}
	}
	sort.Strings(out)
	return out
}

func eventCount(t *testing.T, event string) float64 {
	t.Helper()
	return counterValue(t, shard.Events.WithLabelValues(event))
}

func counterValue(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.GetCounter() == nil {
		t.Fatalf("not a counter: %s", strings.TrimSpace(d.String()))
	}
	return d.GetCounter().GetValue()
}

func gaugeValue(t *testing.T, g prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := g.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetGauge().GetValue()
}
