package controller

import (
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
)

// Defaults of the drift sweep's flags, chosen from what they cost.
//
// A sweep of N Kafka topics is 2×⌈N/500⌉ requests (Metadata and
// DescribeConfigs of up to 500 topics each): 4 for 1000 topics. An S3 sweep
// is one ListBuckets per endpoint. Every 30 s that is 480 Kafka requests an
// hour for 1000 topics, where the per-object re-check every 5 minutes was
// 2 per topic, 24,000 an hour. Drift is then seen within 30 s plus the
// sweep itself (tens of milliseconds) and repaired by one reconcile, well
// inside a minute; sweeping more often would buy little and cost
// proportionally more.
//
// On a backend whose sweep sees everything Ensure acts on (kadm), the
// per-object re-check is only a safety net: 1000 topics re-checked one by
// one cost about 2,000 requests per round, so a round every 6 hours costs
// about 330 an hour, no more than the sweep itself (a round every 4.2 hours
// would equal it). Backends whose sweep is partial (s3: existence only)
// keep --recheck-interval for the rest.
const (
	DefaultDriftSweepInterval   = 30 * time.Second
	DefaultSweptRecheckInterval = 6 * time.Hour
	// minDriftSweepInterval keeps a typo from sweeping in a hot loop.
	minDriftSweepInterval = time.Second
)

// validateSweep checks the sweep's flags.
func validateSweep(o Options) error {
	if o.DriftSweep != 0 && o.DriftSweep < minDriftSweepInterval {
		return fmt.Errorf("--drift-sweep-interval %s: want 0 (no sweep) or at least %s", o.DriftSweep, minDriftSweepInterval)
	}
	if o.SweptRecheck < 0 {
		return fmt.Errorf("--swept-recheck-interval %s: want a positive duration", o.SweptRecheck)
	}
	return nil
}

// driftedBuffer is how many drifted Bucketies a sweep may hand over
// before it waits for the Buckety controller to take them.
const driftedBuffer = 64

// sweepRecheck is the Buckety reconciler's per-object re-check on backends
// whose sweep is complete, and the drivers.Resource.MaxAge of its Ensure
// there (buckety.Options): with the sweep on, a long safety net and one
// sweep interval, since the sweep bounds how long drift goes unseen; with
// it off, zero (every Buckety re-checked every Recheck, reading the
// backend every time).
func sweepRecheck(o Options) (swept, maxAge time.Duration) {
	if o.DriftSweep <= 0 {
		return 0, 0
	}
	swept = o.SweptRecheck
	if swept <= 0 {
		swept = DefaultSweptRecheckInterval
	}
	return swept, o.DriftSweep
}

// addSweeper runs the drift sweep on the leader when o.DriftSweep is set,
// sending drifted Bucketies to drifted (a source of the Buckety
// controller).
func addSweeper(mgr ctrl.Manager, o Options, set *backends.Set, drifted chan<- event.GenericEvent) error {
	if o.DriftSweep <= 0 {
		return nil
	}
	return mgr.Add(&buckety.Sweeper{
		Reader: mgr.GetClient(), Backends: set, Interval: o.DriftSweep, Drifted: drifted,
		Log: o.Log.WithName("drift-sweep"),
	})
}
