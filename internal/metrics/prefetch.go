package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// SecretPrefetchDuration times the access controller's start-up read
	// of every buckety Secret of a shard (one per process, or per shard
	// taken), by result: done, or failed (an error or its deadline: the
	// accesses then read their Secrets one by one, a GET each). A read
	// cut short by a stop is not observed.
	SecretPrefetchDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "buckety_secret_prefetch_duration_seconds",
		Help:    "The access controller's start-up read of every buckety Secret of its shard, by result (done or failed).",
		Buckets: []float64{0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 120},
	}, []string{"result"})

	// SecretPrefetchRecorded counts the Secrets those reads recorded as
	// verified, so that their accesses' passes need no GET.
	SecretPrefetchRecorded = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "buckety_secret_prefetch_recorded_total",
		Help: "Secrets the access controller's start-up reads recorded as verified (their accesses' passes need no GET).",
	})
)

func init() {
	ctrlmetrics.Registry.MustRegister(SecretPrefetchDuration, SecretPrefetchRecorded)
}
