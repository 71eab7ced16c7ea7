// Package options is buckety-controller's command line: its flags, their
// defaults, and the checks the flag package cannot make. It stands apart
// from the binary's wiring so that what only reads the flags
// (buckety-release's generated flag reference) does not link the
// controller.
package options

import (
	"flag"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/kubeconfig"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// DefaultConfigDir is where the Deployment mounts buckety-controller.yaml.
const DefaultConfigDir = "/etc/buckety"

// Usage is the command's synopsis, printed before its flags.
const Usage = `usage:
  buckety-controller [-c DIR] [flags]   run the controller
  buckety-controller check [-c DIR]     validate DIR/buckety-controller.yaml offline; exit 0 when valid
  buckety-controller version            print the product and driver versions
`

// DefaultMaxConcurrentReconciles is the default of
// --max-concurrent-reconciles. A reconcile mostly waits on the API server
// and the backend, so workers cost almost nothing while they wait; 16 per
// kind keeps both busy when a platform team applies hundreds of Bucketies
// at once, and lets the kadm driver coalesce that many topics into one
// request. API Priority and Fairness bounds what reaches the API server.
const DefaultMaxConcurrentReconciles = 16

// DefaultOwnerCheckInterval is how often the leader looks for claims whose
// owning Buckety is gone: they only tell the maintainer (metric, alert,
// kubectl column), so a minute is soon enough.
const DefaultOwnerCheckInterval = time.Minute

// Flags are the values the command line sets.
type Flags struct {
	// ConfigDir holds buckety-controller.yaml.
	ConfigDir string
	// Kubeconfig is the kubeconfig file ("": $KUBECONFIG, then in-cluster);
	// RateLimit is the client's rate limit against the API server, and
	// Compression whether it asks for gzip-compressed responses.
	Kubeconfig  string
	RateLimit   kubeconfig.RateLimit
	Compression kubeconfig.Compression
	// Zap configures the log.
	Zap zap.Options
	// MetricsAddr, ProbeAddr and PprofAddr are listen addresses; "0" (and,
	// for PprofAddr, "") disables.
	MetricsAddr, ProbeAddr, PprofAddr string
	// MetricsInsecure serves metrics over plain HTTP to anyone. By default
	// they are served over HTTPS to callers the API server authenticates
	// (TokenReview) and authorizes for GET /metrics (SubjectAccessReview).
	MetricsInsecure bool
	// LeaderElect enables leader election in LeaderElectionNamespace.
	LeaderElect             bool
	LeaderElectionNamespace string
	// Shards is the number of shards the work is split into across
	// replicas (internal/shard); 1: one leader does all of it.
	Shards int
	// LeaseDuration, RenewDeadline and RetryPeriod time the leader
	// election (leader.go); 0: the defaults (tests that build Flags in
	// code).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Recheck is the drift re-check period.
	Recheck time.Duration
	// DriftSweep is the period of each backend's drift sweep; 0: no sweep
	// (every Buckety re-checked every Recheck). SweptRecheck is the
	// per-object re-check on backends whose sweep is complete (0: the
	// default). See sweep.go.
	DriftSweep, SweptRecheck time.Duration
	// MaxConcurrent reconciles per kind.
	MaxConcurrent int
	// OwnerCheck is how often claims are checked for an owner that is gone
	// (claims.Janitor); 0: DefaultOwnerCheckInterval.
	OwnerCheck time.Duration
	// Usage is the period of each backend's usage refresh (status.usage,
	// the usage and budget metrics); 0: no refresh. See usage.go.
	Usage time.Duration
	// DrainUnits bounds one drain step (spec.drain): at most this many
	// objects deleted per pass; 0: the driver's default.
	DrainUnits int
	// BackendProbe is the period of the leader's probe of every backend,
	// which writes the BucketyBackend view and buckety_backend_up; 0: no
	// probe and no view.
	BackendProbe time.Duration
}

// NewFlagSet defines the flags of the command cmd ("run", "check",
// "version", "help"), writing into f.
func NewFlagSet(cmd string, stderr io.Writer, f *Flags) *flag.FlagSet {
	fs := flag.NewFlagSet("buckety-controller "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, Usage); fs.PrintDefaults() }
	fs.StringVar(&f.ConfigDir, "c", DefaultConfigDir, "directory holding "+config.Filename)
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	f.RateLimit.BindFlags(fs)
	f.Compression.BindFlags(fs)
	fs.StringVar(&f.MetricsAddr, "metrics-bind-address", ":8080", "metrics endpoint address; 0 disables it")
	fs.BoolVar(&f.MetricsInsecure, "metrics-insecure", false, "serve metrics over plain HTTP without authentication (default: HTTPS, and only callers the API server authenticates and authorizes for GET /metrics)")
	fs.StringVar(&f.ProbeAddr, "health-probe-bind-address", ":8081", "health and readiness probe address")
	fs.StringVar(&f.PprofAddr, "pprof-bind-address", "0", "address serving Go's /debug/pprof/ profiles (heap, goroutines, CPU), unauthenticated: bind it to 127.0.0.1 and reach it with kubectl port-forward; 0 disables it")
	fs.BoolVar(&f.LeaderElect, "leader-elect", true, "elect a leader so only one replica reconciles (keep on: two replicas run during a rollout)")
	fs.StringVar(&f.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the Pod's namespace)")
	fs.IntVar(&f.Shards, "shards", 1, "split the work into this many shards, one Lease each, that the replicas share out (each its share, each watching only its shards' namespaces); 1: one leader does all of it. Every replica must run with the same number (a rollout that changes it waits for the older replicas to go); needs --leader-elect")
	fs.DurationVar(&f.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, "how long standby replicas wait, after the leader last renewed the Lease, before one takes it: the failover time when the leader crashes or loses the API server (a leader that stops cleanly releases it at once); a whole number of seconds, as a Lease records it")
	fs.DurationVar(&f.RenewDeadline, "leader-elect-renew-deadline", DefaultRenewDeadline, "how long the leader retries a failed renewal before it stops reconciling and exits; less than the lease duration")
	fs.DurationVar(&f.RetryPeriod, "leader-elect-retry-period", DefaultRetryPeriod, "how often replicas try to take or renew the Lease")
	fs.DurationVar(&f.Recheck, "recheck-interval", 5*time.Minute, "how often each resource is re-checked for out-of-band drift (plus up to 10% jitter), on backends without a complete drift sweep")
	fs.DurationVar(&f.DriftSweep, "drift-sweep-interval", DefaultDriftSweepInterval, "how often each backend whose driver can sweep is checked for drift in a few batched requests, reconciling only drifted Bucketies; 0 disables sweeping")
	fs.DurationVar(&f.SweptRecheck, "swept-recheck-interval", DefaultSweptRecheckInterval, "per-resource re-check (plus up to 10% jitter) on backends whose sweep sees all drift (kadm): a safety net")
	fs.IntVar(&f.MaxConcurrent, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles, "reconciles run in parallel per kind, in each shard this replica holds (--shards)")
	fs.DurationVar(&f.OwnerCheck, "owner-check-interval", DefaultOwnerCheckInterval, "how often claims are checked for an owning Buckety that is gone (its finalizer removed by hand), to report them (status.ownerGoneSince, buckety_claims{owner=\"gone\"})")
	fs.DurationVar(&f.Usage, "usage-interval", DefaultUsageInterval, "how often each backend's resources are measured for status.usage, QuotaWarning and the usage and budget metrics, in a few requests per backend where the service allows; 0 disables it")
	fs.IntVar(&f.DrainUnits, "drain-units", 0, "the most objects (a bucket's versions, delete markers and uploads) one drain pass deletes before the Buckety's next pass; 0: the driver's default (10,000 on S3; a topic's pass is one DeleteRecords whatever this says)")
	fs.DurationVar(&f.BackendProbe, "backend-probe-interval", DefaultBackendProbeInterval, "how often the leader probes each backend with one cheap read, for kubectl get bucketybackends and buckety_backend_up: a backend that stops answering shows within about one interval; 0 disables the probe and the BucketyBackend objects")
	f.Zap.BindFlags(fs)
	return fs
}

// Reference is the command's flags with their defaults, for its generated
// reference (buckety-release docs).
func Reference() *flag.FlagSet {
	return NewFlagSet("", io.Discard, &Flags{})
}

// Validate checks the flag values that the flag package cannot.
func (f *Flags) Validate() error {
	if f.MaxConcurrent < 1 {
		return fmt.Errorf("--max-concurrent-reconciles %d: want at least 1", f.MaxConcurrent)
	}
	if err := f.validateBackendProbe(); err != nil {
		return err
	}
	if err := f.validateUsage(); err != nil {
		return err
	}
	if err := f.validateLeaderElection(); err != nil {
		return err
	}
	if f.Shards < 1 || f.Shards > shard.Slots {
		return fmt.Errorf("--shards %d: want 1 to %d", f.Shards, shard.Slots)
	}
	if f.Shards > 1 && !f.LeaderElect {
		return fmt.Errorf("--shards %d needs --leader-elect: shards are handed out by Leases", f.Shards)
	}
	if err := f.validateSweep(); err != nil {
		return err
	}
	return f.RateLimit.Validate()
}

// LoadRESTConfig loads the kubeconfig and applies the rate limit and the
// compression setting.
func (f *Flags) LoadRESTConfig() (*rest.Config, error) {
	return kubeconfig.LoadWith(f.Kubeconfig, f.RateLimit, f.Compression)
}
