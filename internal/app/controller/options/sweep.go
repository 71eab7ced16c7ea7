package options

import (
	"fmt"
	"time"
)

// Defaults of the drift sweep's flags, chosen from what they cost.
//
// A sweep of N Kafka topics is ⌈N/5000⌉ + ⌈N/1000⌉ requests (Metadata of
// up to 5000 topics, DescribeConfigs of up to 1000): 2 for 1000 topics. An
// S3 sweep is one ListBuckets per endpoint. Every 30 s that is 240 Kafka
// requests an hour for 1000 topics, where the per-object re-check every 5 minutes was
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
func (f *Flags) validateSweep() error {
	if f.DriftSweep != 0 && f.DriftSweep < minDriftSweepInterval {
		return fmt.Errorf("--drift-sweep-interval %s: want 0 (no sweep) or at least %s", f.DriftSweep, minDriftSweepInterval)
	}
	if f.SweptRecheck < 0 {
		return fmt.Errorf("--swept-recheck-interval %s: want a positive duration", f.SweptRecheck)
	}
	return nil
}
