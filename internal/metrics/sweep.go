package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// DriftSweeps counts drift sweeps per backend by result: ok, or error
	// (the backend could not be swept; nothing was enqueued).
	DriftSweeps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_drift_sweeps_total",
		Help: "Drift sweeps of a backend, by result (ok or error).",
	}, []string{"backend", "result"})

	// DriftSweepEnqueued counts Bucketies a sweep found drifted and handed
	// to the Buckety reconciler.
	DriftSweepEnqueued = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_drift_sweep_enqueued_total",
		Help: "Bucketies a drift sweep found drifted and enqueued for reconciliation.",
	}, []string{"backend"})

	// DriftSweepResources is what the last successful sweep of a backend
	// found, per verdict: in_sync, drifted (enqueued), or unjudged (the
	// backend answered with an error about the resource).
	DriftSweepResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "buckety_drift_sweep_resources",
		Help: "Resources judged by the last drift sweep of a backend, by verdict.",
	}, []string{"backend", "verdict"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(DriftSweeps, DriftSweepEnqueued, DriftSweepResources)
}
