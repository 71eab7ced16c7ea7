package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// DrainedObjects counts what drains (Buckety spec.drain) deleted, per
	// backend: a bucket's object versions, delete markers and uploads, a
	// topic's records.
	DrainedObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_drained_objects_total",
		Help: "Objects (a bucket's versions, delete markers and uploads; a topic's records) deleted by drains, per backend.",
	}, []string{"backend"})
	// DrainPasses counts drain passes per backend by result: progress
	// (something deleted), idle (nothing deleted), done (found empty) or
	// error.
	DrainPasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_drain_passes_total",
		Help: "Drain passes per backend, by result: progress, idle, done or error.",
	}, []string{"backend", "result"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(DrainedObjects, DrainPasses)
}
