// Package options is buckety-webhook's command line: its flags and their
// defaults. It stands apart from the binary's wiring so that what only
// reads the flags (buckety-release's generated flag reference) does not
// link the webhook.
package options

import (
	"flag"
	"io"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/kubeconfig"
)

// Flags are the values the command line sets.
type Flags struct {
	// ConfigDir holds buckety-controller.yaml (loaded without
	// credentials).
	ConfigDir string
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, then in-cluster);
	// RateLimit is the client's rate limit against the API server, and
	// Compression whether it asks for gzip-compressed responses.
	Kubeconfig  string
	RateLimit   kubeconfig.RateLimit
	Compression kubeconfig.Compression
	// Version prints the version and exits.
	Version bool
	// Zap configures the log.
	Zap zap.Options
	// Host and Port are the TLS listen address; CertDir holds tls.crt and
	// tls.key (reloaded when cert-manager renews them).
	Host    string
	Port    int
	CertDir string
	// MetricsAddr, ProbeAddr and PprofAddr are listen addresses; "0"
	// (and, for PprofAddr, "") disables.
	MetricsAddr, ProbeAddr, PprofAddr string
	// MetricsInsecure serves metrics over plain HTTP to anyone; by default
	// HTTPS to callers authorized for GET /metrics.
	MetricsInsecure bool
	// ShutdownDelay keeps serving after SIGTERM, not ready, so endpoints
	// drop the Pod before it stops listening.
	ShutdownDelay time.Duration
	// ReusePort shares the admission port with other replicas on the same
	// host network (SO_REUSEPORT).
	ReusePort bool
}

// NewFlagSet defines the command's flags, writing into f.
func NewFlagSet(stderr io.Writer, f *Flags) *flag.FlagSet {
	fs := flag.NewFlagSet("buckety-webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.ConfigDir, "c", "/etc/buckety", "directory holding "+config.Filename+" (loaded without credentials)")
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	f.RateLimit.BindFlags(fs)
	f.Compression.BindFlags(fs)
	fs.StringVar(&f.Host, "host", "", "address to serve admission on (default: all)")
	fs.IntVar(&f.Port, "port", 9443, "port to serve admission on")
	fs.StringVar(&f.CertDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory holding tls.crt and tls.key")
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", ":8080", "metrics endpoint address; 0 disables it")
	fs.BoolVar(&f.MetricsInsecure, "metrics-insecure", false, "serve metrics over plain HTTP without authentication (default: HTTPS, and only callers the API server authenticates and authorizes for GET /metrics)")
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", ":8081", "health and readiness probe address")
	fs.DurationVar(&f.ShutdownDelay, "shutdown-delay", 5*time.Second, "after SIGTERM, keep serving while not ready for this long, so a rolling update drops no admission request")
	fs.StringVar(&f.PprofAddr, "pprof-bind-address", "0", "address serving Go's /debug/pprof/ profiles (CPU, heap, goroutines), unauthenticated: bind it to 127.0.0.1 and reach it with kubectl port-forward; 0 disables it")
	fs.BoolVar(&f.ReusePort, "reuse-port", false, "share the admission port with other replicas on the same host network (SO_REUSEPORT; for hostNetwork Deployments)")
	fs.BoolVar(&f.Version, "version", false, "print the version and exit")
	f.Zap.BindFlags(fs)
	return fs
}

// Reference is the command's flags with their defaults, for its generated
// reference (buckety-release docs).
func Reference() *flag.FlagSet {
	return NewFlagSet(io.Discard, &Flags{})
}
