package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/access"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
)

// When a start's work is done, for memory.StartupGC: the caches have
// synced and every Buckety and access they held then has been reconciled
// once (the reconcile counts have reached the objects counted at the
// sync). Work that arrives meanwhile (a thousand Bucketies applied while
// the controller starts) is not the start's: it runs at the default
// setting, as it would on a controller started earlier. The work queues
// end a start too: once seen holding work, empty at two checks in a row.
// A replica with nothing to do (a standby waiting for the lease runs no
// controllers; an empty cluster queues nothing) never sees a depth above
// 0, and startupQuiet checks of empty queues end its start.

// startupQuiet is how many checks in a row that find the queues empty end
// a start in which no queued work was ever seen.
const startupQuiet = 10

// startWork is what a check reads: the work queues' depth, summed, and the
// reconciles the Buckety and access controllers have done since the
// process started.
type startWork struct {
	depth, reconciles float64
}

// startupSettled returns the wait memory.StartupGC runs: synced, then
// objects (the Bucketies and accesses cached then; an error leaves only
// the queues' rule), then a check of read every interval until the
// reconciles reach the objects or the queues' rule ends the start. A
// check that cannot be read counts as work: it ends nothing (the start-up
// setting's own limit does).
func startupSettled(synced func(context.Context) bool, objects func(context.Context) (int, error), read func() (startWork, error), every time.Duration) func(context.Context) bool {
	return func(ctx context.Context) bool {
		if !synced(ctx) {
			return false
		}
		n, err := objects(ctx)
		counted := err == nil
		t := time.NewTicker(every)
		defer t.Stop()
		seen, empty := false, 0
		for {
			w, err := read()
			switch {
			case err != nil || w.depth > 0:
				seen = seen || err == nil
				empty = 0
			default:
				empty++
			}
			if err == nil && counted && w.reconciles >= float64(n) {
				return true
			}
			if (seen && empty >= 2) || (!seen && empty >= startupQuiet) {
				return true
			}
			select {
			case <-ctx.Done():
				return false
			case <-t.C:
			}
		}
	}
}

// cachedObjects counts the Bucketies and accesses r holds.
func cachedObjects(r client.Reader) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		var bl v1.BucketyList
		if err := r.List(ctx, &bl, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		var al v1.BucketyAccessList
		if err := r.List(ctx, &al, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		return len(bl.Items) + len(al.Items), nil
	}
}

// The metrics a check reads, as controller-runtime registers them: every
// controller's queue depth (labelled by its name) and its reconciles
// (labelled by controller and result).
var (
	depthMetric      = prometheus.BuildFQName("", ctrlmetrics.WorkQueueSubsystem, ctrlmetrics.DepthKey)
	reconcilesMetric = "controller_runtime_reconcile_total"
)

// readStartWork reads a check from g. A collector that fails (a Gather
// error) does not hide the metrics gathered beside it; no queue at all is
// a depth of 0.
func readStartWork(g prometheus.Gatherer) (startWork, error) {
	fams, err := g.Gather()
	var w startWork
	found := false
	for _, f := range fams {
		switch f.GetName() {
		case depthMetric:
			found = true
			for _, m := range f.GetMetric() {
				w.depth += m.GetGauge().GetValue()
			}
		case reconcilesMetric:
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "controller" && (l.GetValue() == buckety.ControllerName || l.GetValue() == access.ControllerName) {
						w.reconciles += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	if err != nil && !found {
		return startWork{}, fmt.Errorf("gather metrics: %w", err)
	}
	return w, nil
}
