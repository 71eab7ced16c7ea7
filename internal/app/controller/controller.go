// Package controller is the buckety-controller binary: flags, configuration
// and wiring of the manager, the backends and the two reconcilers. The
// command is thin so tests can run it in-process with their own arguments.
package controller

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/backendview"
	"github.com/Yolean/buckety-controller/internal/kubeconfig"
	"github.com/Yolean/buckety-controller/internal/runtime/memory"
	"github.com/Yolean/buckety-controller/internal/version"
)

// DefaultConfigDir is where the Deployment mounts buckety-controller.yaml.
const DefaultConfigDir = "/etc/buckety"

const usage = `usage:
  buckety-controller [-c DIR] [flags]   run the controller
  buckety-controller check [-c DIR]     validate DIR/buckety-controller.yaml offline; exit 0 when valid
  buckety-controller version            print the product and driver versions
`

// Main runs the command with args (without the program name) and returns the
// process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, all.Registry())
}

func run(args []string, stdout, stderr io.Writer, reg *drivers.Registry) int {
	cmd := "run"
	if len(args) > 0 && (args[0] == "check" || args[0] == "version" || args[0] == "help") {
		cmd, args = args[0], args[1:]
	}
	o := Options{Registry: reg}
	fs, cf := newFlagSet(cmd, stderr, &o)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "buckety-controller: unexpected argument %q\n%s", fs.Arg(0), usage)
		return 2
	}
	if err := cf.validate(o); err != nil {
		fmt.Fprintf(stderr, "buckety-controller: %v\n", err)
		return 2
	}
	switch cmd {
	case "help":
		fs.Usage()
		return 0
	case "version":
		fmt.Fprintf(stdout, "buckety-controller %s\n", version.Version)
		for _, n := range reg.Names() {
			d, _ := reg.Get(n)
			fmt.Fprintf(stdout, "driver %s %s\n", n, d.Version())
		}
		return 0
	}
	cfg, err := config.Load(o.ConfigDir, config.Options{Registry: reg})
	if err != nil {
		fmt.Fprintf(stderr, "buckety-controller: invalid configuration: %v\n", err)
		return 1
	}
	if cmd == "check" {
		fmt.Fprintf(stdout, "%s: valid, %d backend(s):\n", cfg.Dir()+"/"+config.Filename, len(cfg.Backends))
		for _, b := range cfg.Backends {
			fmt.Fprintf(stdout, "  %s (driver %s %s)\n", b.Name, b.Driver, b.DriverImpl().Version())
		}
		return 0
	}
	o.Config = cfg
	o.GOGC = memory.ApplyGCDefault(os.Getenv)
	o.ReleaseStartupPages = true
	o.Log = zap.New(zap.UseFlagOptions(&cf.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(o.Log)
	klog.SetLogger(o.Log) // client-go (leader election) logs the same way
	rc, err := cf.restConfig()
	if err != nil {
		fmt.Fprintf(stderr, "buckety-controller: %v\n", err)
		return 1
	}
	o.RESTConfig = rc
	if err := Run(ctrl.SetupSignalHandler(), o); err != nil {
		fmt.Fprintf(stderr, "buckety-controller: %v\n", err)
		return 1
	}
	return 0
}

// DefaultMaxConcurrentReconciles is the default of
// --max-concurrent-reconciles. A reconcile mostly waits on the API server
// and the backend, so workers cost almost nothing while they wait; 16 per
// kind keeps both busy when a platform team applies hundreds of Bucketies
// at once, and lets the kadm driver coalesce that many topics into one
// request. API Priority and Fairness bounds what reaches the API server.
const DefaultMaxConcurrentReconciles = 16

// cliFlags are the command-line values that are not Options fields.
type cliFlags struct {
	kubeconfig string
	limit      kubeconfig.RateLimit
	zap        zap.Options
}

// newFlagSet defines the command's flags, writing into o and the returned
// cliFlags.
func newFlagSet(cmd string, stderr io.Writer, o *Options) (*flag.FlagSet, *cliFlags) {
	fs := flag.NewFlagSet("buckety-controller "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	cf := &cliFlags{}
	fs.StringVar(&o.ConfigDir, "c", DefaultConfigDir, "directory holding "+config.Filename)
	fs.StringVar(&cf.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then in-cluster)")
	cf.limit.BindFlags(fs)
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "metrics endpoint address; 0 disables it")
	fs.BoolVar(&o.MetricsInsecure, "metrics-insecure", false, "serve metrics over plain HTTP without authentication (default: HTTPS, and only callers the API server authenticates and authorizes for GET /metrics)")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "health and readiness probe address")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "0", "address serving Go's /debug/pprof/ profiles (heap, goroutines, CPU), unauthenticated: bind it to 127.0.0.1 and reach it with kubectl port-forward; 0 disables it")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader so only one replica reconciles (keep on: two replicas run during a rollout)")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the Pod's namespace)")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", DefaultLeaseDuration, "how long standby replicas wait, after the leader last renewed the Lease, before one takes it: the failover time when the leader crashes or loses the API server (a leader that stops cleanly releases it at once)")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", DefaultRenewDeadline, "how long the leader retries a failed renewal before it stops reconciling and exits; less than the lease duration")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", DefaultRetryPeriod, "how often replicas try to take or renew the Lease")
	fs.DurationVar(&o.Recheck, "recheck-interval", 5*time.Minute, "how often each resource is re-checked for out-of-band drift (plus up to 10% jitter), on backends without a complete drift sweep")
	fs.DurationVar(&o.DriftSweep, "drift-sweep-interval", DefaultDriftSweepInterval, "how often each backend whose driver can sweep is checked for drift in a few batched requests, reconciling only drifted Bucketies; 0 disables sweeping")
	fs.DurationVar(&o.SweptRecheck, "swept-recheck-interval", DefaultSweptRecheckInterval, "per-resource re-check (plus up to 10% jitter) on backends whose sweep sees all drift (kadm): a safety net")
	fs.IntVar(&o.MaxConcurrent, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles, "reconciles run in parallel per kind")
	fs.DurationVar(&o.OwnerCheck, "owner-check-interval", DefaultOwnerCheckInterval, "how often claims are checked for an owning Buckety that is gone (its finalizer removed by hand), to report them (status.ownerGoneSince, buckety_claims{owner=\"gone\"})")
	fs.DurationVar(&o.Usage, "usage-interval", DefaultUsageInterval, "how often each backend's resources are measured for status.usage, QuotaWarning and the usage and budget metrics, in a few requests per backend where the service allows; 0 disables it")
	fs.IntVar(&o.DrainUnits, "drain-units", 0, "the most objects (a bucket's versions, delete markers and uploads) one drain pass deletes before the Buckety's next pass; 0: the driver's default (10,000 on S3; a topic's pass is one DeleteRecords whatever this says)")
	fs.DurationVar(&o.BackendProbe, "backend-probe-interval", backendview.DefaultInterval, "how often the leader probes each backend with one cheap read, for kubectl get bucketybackends and buckety_backend_up: a backend that stops answering shows within about one interval; 0 disables the probe and the BucketyBackend objects")
	cf.zap.BindFlags(fs)
	return fs, cf
}

// Flags are the command's flags with their defaults, for its generated
// reference (buckety-release docs).
func Flags() *flag.FlagSet {
	fs, _ := newFlagSet("", io.Discard, &Options{})
	return fs
}

// validate checks the flag values that the flag package cannot.
func (cf *cliFlags) validate(o Options) error {
	if o.MaxConcurrent < 1 {
		return fmt.Errorf("--max-concurrent-reconciles %d: want at least 1", o.MaxConcurrent)
	}
	if err := validateBackendProbe(o); err != nil {
		return err
	}
	if err := validateUsage(o); err != nil {
		return err
	}
	if err := validateLeaderElection(o); err != nil {
		return err
	}
	if err := validateSweep(o); err != nil {
		return err
	}
	return cf.limit.Validate()
}

// restConfig loads the kubeconfig and applies the rate limit.
func (cf *cliFlags) restConfig() (*rest.Config, error) {
	rc, err := kubeconfig.Load(cf.kubeconfig)
	if err != nil {
		return nil, err
	}
	cf.limit.Apply(rc)
	return rc, nil
}

// podNamespace is the namespace the controller runs in, for the Lease.
func podNamespace() (string, error) {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "", errors.New("leader election needs a namespace: set --leader-election-namespace or POD_NAMESPACE")
	}
	return strings.TrimSpace(string(b)), nil
}
