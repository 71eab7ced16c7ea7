// Package metrics defines buckety's Prometheus metrics, registered with
// controller-runtime's registry so they are served beside its own on the
// controller's metrics endpoint, and how that endpoint is served
// (SecureOptions, AuthFilter). The gauges of objects by condition
// (RegisterResources) are read from the informer cache at scrape time.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// BackendRequestDuration is the latency of driver operations per
	// backend, driver and operation.
	BackendRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "buckety_backend_request_duration_seconds",
		Help:    "Latency of driver operations against a backend.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
	}, []string{"backend", "driver", "operation"})

	// BackendRequestErrors counts failed driver operations by kind:
	// unavailable, access_denied, drift, in_progress or request.
	BackendRequestErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_backend_request_errors_total",
		Help: "Failed driver operations against a backend, by kind.",
	}, []string{"backend", "driver", "operation", "kind"})

	// DriftDetected counts drift found on a backend resource, repaired or
	// not.
	DriftDetected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_drift_detected_total",
		Help: "Out-of-band drift detected on backend resources.",
	}, []string{"backend", "repairable"})

	// DriftRepaired counts drift the controller repaired.
	DriftRepaired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_drift_repaired_total",
		Help: "Out-of-band drift repaired on backend resources.",
	}, []string{"backend"})

	// NameConflicts counts Bucketies that found their resource owned by
	// another Buckety, once per episode; the controller's log names both.
	NameConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_name_conflicts_total",
		Help: "Bucketies that found their backend resource owned by another Buckety (the log names the owner).",
	}, []string{"backend"})

	// AdoptionsRefused counts refused adoptions of resources that hold
	// content, once per episode; the controller's log has the driver's
	// detail.
	AdoptionsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_adoptions_refused_total",
		Help: "Bucketies refused an existing backend resource that holds content (the log has the detail).",
	}, []string{"backend"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(BackendRequestDuration, BackendRequestErrors, DriftDetected, DriftRepaired, NameConflicts, AdoptionsRefused)
}
