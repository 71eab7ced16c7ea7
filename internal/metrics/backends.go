package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// BackendUp is 1 when a backend answered the leader's last probe with
	// the controller's credentials, 0 when it did not (any reason: the
	// BucketyBackend's Ready condition has it). Absent before the first
	// probe and on replicas that are not the leader.
	BackendUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "buckety_backend_up",
		Help: "1 when the backend answered the controller's last probe (BucketyBackend Ready True), 0 when it did not; the reason label is the Ready reason.",
	}, []string{"backend", "driver", "reason"})

	// BackendDegraded is 1 while a backend that answers its probes warned
	// of something its operator should fix (BucketyBackend Degraded True,
	// drivers.Warner), 0 when the last probe that passed warned of
	// nothing. Absent until a probe passed and on replicas that are not
	// the leader; a failing probe leaves it as it was.
	BackendDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "buckety_backend_degraded",
		Help: "1 when the backend's last probe that passed warned of something its operator should fix (BucketyBackend Degraded True), 0 when it warned of nothing; one series per reason warned of (the Degraded reason is the first).",
	}, []string{"backend", "driver", "reason"})

	// BackendProbes counts the probes of a backend the leader started:
	// its BucketyBackend's status.probes numbers them the same way, from
	// the leader's start.
	BackendProbes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_backend_probes_total",
		Help: "Probes of the backend the controller's leader started.",
	}, []string{"backend"})

	// BackendLastProbe is the Unix time of a backend's last probe.
	BackendLastProbe = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "buckety_backend_last_probe_timestamp_seconds",
		Help: "Unix time of the controller's last probe of the backend.",
	}, []string{"backend"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(BackendUp, BackendDegraded, BackendProbes, BackendLastProbe)
}
