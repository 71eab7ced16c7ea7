package shard

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The Assigner's metrics, served by a replica that runs --shards N with
// N > 1 (RegisterMetrics). Summed over the replicas, HeldGauge says
// which shard runs where, and a shard held nowhere (BucketyShardsUnserved)
// is one whose objects nobody reconciles.
var (
	// ShardsGauge is the installation's number of shards (--shards).
	ShardsGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "buckety_shards",
		Help: "The installation's number of shards (--shards), on each replica that runs them.",
	})
	// HeldGauge is 1 for each shard this replica holds; a shard it does
	// not hold has no series here.
	HeldGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "buckety_shard_held",
		Help: "1 for each shard this replica holds and runs; no series for the shards it does not hold.",
	}, []string{"shard"})
	// Events counts the shards this replica took, released (its
	// work stopped first: a balance, a stop) and lost (its Lease not
	// renewed by the renew deadline, or found another's).
	Events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_shard_events_total",
		Help: "Shards this replica took, released (after their work stopped) and lost (their Lease not renewed in time, or another's), by event.",
	}, []string{"event"})
	// Warms counts the shards this replica warmed ahead of a take
	// (Assigner.Warm) by how each warm ended: taken here, or dropped (the
	// holder renewed its Lease, another replica took the shard, this
	// replica stopped).
	Warms = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_shard_warms_total",
		Help: "Shards whose caches this replica filled ahead of a take, their holder looking gone, by outcome: taken here, or dropped (the holder renewed, another replica took it, this one stopped).",
	}, []string{"outcome"})
	// ReplicasGauge is how many live replicas of this number of shards,
	// this one included, the newest count of the member Leases found.
	ReplicasGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "buckety_shard_replicas",
		Help: "The live replicas running this number of shards, this one included, at this replica's newest count of the member Leases.",
	})
	// CountFailures counts the counts of the replicas that failed.
	// A replica whose last count is older than a Lease duration takes no
	// shard.
	CountFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "buckety_shard_count_failures_total",
		Help: "Counts of the replicas (this replica's member Lease renewed, the others' listed) that failed; a replica whose last count is older than a Lease duration takes no shard.",
	})
)

// Shard events (Events' event label).
const (
	EventTaken    = "taken"
	EventReleased = "released"
	EventLost     = "lost"
)

// How a warm ended (Warms' outcome label).
const (
	WarmTaken   = "taken"
	WarmDropped = "dropped"
)

// metricLabel is shard k as the shard label's value.
func metricLabel(k int) string { return strconv.Itoa(k) }

// record counts event for shard k, and sets whether it is held here.
func record(k int, event string) {
	if event == EventTaken {
		HeldGauge.WithLabelValues(metricLabel(k)).Set(1)
	} else {
		HeldGauge.DeleteLabelValues(metricLabel(k))
	}
	Events.WithLabelValues(event).Inc()
}

// RegisterMetrics registers the Assigner's metrics with
// controller-runtime's registry: a replica that runs shards calls it once
// (the webhook, which reads slots only, and a replica of one shard serve
// none of them).
func RegisterMetrics() error {
	registerOnce.Do(func() {
		for _, c := range []prometheus.Collector{ShardsGauge, HeldGauge, Events, Warms, ReplicasGauge, CountFailures} {
			if err := ctrlmetrics.Registry.Register(c); err != nil {
				registerErr = err
				return
			}
		}
		for _, e := range []string{EventTaken, EventReleased, EventLost} {
			Events.WithLabelValues(e)
		}
		for _, o := range []string{WarmTaken, WarmDropped} {
			Warms.WithLabelValues(o)
		}
	})
	return registerErr
}

var (
	registerOnce sync.Once
	registerErr  error
)
