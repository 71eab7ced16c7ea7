package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/app/controller/options"
	"github.com/Yolean/buckety-controller/internal/app/crds"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/access"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/queue"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/runtime/memory"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/internal/version"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=buckety-system,resources=leases,verbs=get;list;create;update;delete
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups="",namespace=buckety-system,resources=events,verbs=create;patch

// metricsOptions serves metrics with authentication and authorization (the
// kubebuilder default) unless insecure: a NetworkPolicy would depend on the
// cluster's CNI enforcing it, the filter does not.
func metricsOptions(addr string, insecure bool) (metricsserver.Options, error) {
	if insecure {
		return metricsserver.Options{BindAddress: addr}, nil
	}
	return metrics.SecureOptions(addr, metrics.AuthFilter)
}

// LeaderElectionID names the Lease replicas compete for.
const LeaderElectionID = "buckety-controller.buckety.yolean.se"

// Options configure a controller run.
type Options struct {
	// Flags are the command line's values.
	options.Flags
	// Config is the loaded buckety-controller.yaml.
	Config *config.Config
	// Registry holds the drivers (used for flags parsing and checks).
	Registry *drivers.Registry
	// RESTConfig reaches the API server.
	RESTConfig *rest.Config
	// Log is the logger.
	Log logr.Logger
	// GOGC is the garbage collector's setting in effect
	// (memory.DefaultGOGC unless the environment set one), for the
	// start-up log.
	GOGC string
	// StartupGC is set when the collector runs at memory.StartupGOGC
	// until the start's work is done (memory.StartupGC ends it, when
	// ReleaseMemory is set too).
	StartupGC bool
	// ReleaseMemory hands the kernel back the binary's pages that
	// start-up touched, once the caches have synced (see
	// memory.StartupPages), and free heap pages after bursts
	// (memory.Releaser): the command sets it; tests that run the
	// controller in their own process leave it off.
	ReleaseMemory bool
	// SkipNameValidation lets tests run several managers in one process.
	SkipNameValidation bool
	// RetryBackoff spaces the Buckety reconciler's retries after failures;
	// nil: retry.Backoff's defaults. Tests that tell a wake from a retry
	// set it to hours.
	RetryBackoff *retry.Backoff
	// LimitRetry is how soon an access waiting for an access limit looks
	// again on its own; 0: access.LimitRetry. Tests that tell a wake from
	// a retry set it to hours.
	LimitRetry time.Duration
	// OwnerSettle is how long a Buckety waits before adopting an existing
	// resource without an owner record (buckety.Reconciler.OwnerSettle);
	// 0: its default. Tests that hold a creator between its create and
	// its record set it longer.
	OwnerSettle time.Duration
}

// Scheme returns the scheme of the controller's client.
func Scheme() (*runtime.Scheme, error) { return objects.Scheme() }

// Run runs the controller until ctx ends, then shuts down gracefully:
// in-flight reconciles finish, the Lease is released, backends are closed.
//
// A stop that comes while it is still starting (reading the installation
// name, opening backends) is a clean stop too: what was interrupted is
// the context's cancellation, not a fault.
func Run(ctx context.Context, o Options) error {
	err := runUntilStopped(ctx, o)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		o.Log.Info("stopped while starting", "interrupted", err.Error())
		return nil
	}
	return err
}

func runUntilStopped(ctx context.Context, o Options) (reterr error) {
	log := o.Log
	if o.Recheck <= 0 {
		o.Recheck = 5 * time.Minute
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = options.DefaultMaxConcurrentReconciles
	}
	scheme, err := Scheme()
	if err != nil {
		return err
	}
	if o.LeaderElect && o.LeaderElectionNamespace == "" {
		if o.LeaderElectionNamespace, err = podNamespace(); err != nil {
			return err
		}
	}
	gracePeriod := 30 * time.Second
	mo, err := metricsOptions(o.MetricsAddr, o.MetricsInsecure)
	if err != nil {
		return err
	}
	// The caches and indexes below need buckety's kinds served; on a first
	// install they may be a moment behind this Pod (internal/app/crds).
	if err := crds.WaitServed(ctx, o.RESTConfig, scheme, v1.GroupVersion, log); err != nil {
		return err
	}
	lease, renew, retry := leaderTimings(o)
	// One shard: the single leader's lock waits for the replicas that run
	// shards (a rollout turning shards off) to go before it is taken
	// (shard.UnshardedLock). Its Lease lock and client are made below,
	// once the manager has added the Lease kind to the scheme; the lock is
	// used only once the manager starts.
	var single *shard.UnshardedLock
	var lock resourcelock.Interface
	if o.LeaderElect && o.Shards <= 1 {
		single = &shard.UnshardedLock{Namespace: o.LeaderElectionNamespace, Name: LeaderElectionID, LeaseDuration: *lease, Log: log.WithName("leader-election")}
		lock = single
	}
	mgr, err := ctrl.NewManager(o.RESTConfig, ctrl.Options{
		Scheme:                              scheme,
		Logger:                              log,
		Metrics:                             mo,
		HealthProbeBindAddress:              o.ProbeAddr,
		PprofBindAddress:                    o.PprofAddr,
		LeaderElection:                      o.LeaderElect && o.Shards <= 1,
		LeaderElectionID:                    LeaderElectionID,
		LeaderElectionNamespace:             o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel:       true,
		LeaderElectionResourceLockInterface: lock,
		// The Lease is renewed on a connection of its own (shards.go).
		LeaderElectionConfig:    ownConnection(o.RESTConfig),
		LeaseDuration:           lease,
		RenewDeadline:           renew,
		RetryPeriod:             retry,
		GracefulShutdownTimeout: &gracePeriod,
		Cache:                   cacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if single != nil {
		if err := singleLeaderLock(single, mgr, o, scheme, *renew); err != nil {
			return err
		}
	}
	set, err := openBackends(ctx, o, mgr.GetAPIReader())
	if err != nil {
		return err
	}
	defer func() {
		if err := set.Close(); err != nil {
			reterr = errors.Join(reterr, fmt.Errorf("close backends: %w", err))
		}
	}()
	if o.Shards > 1 {
		return runShards(ctx, mgr, o, scheme, set)
	}
	// One shard: this manager is the single leader's.
	bo, err := wire(ctx, mgr, o, set, nil)
	if err != nil {
		return err
	}
	if err := addHealthChecks(ctx, mgr); err != nil {
		return err
	}
	if err := addMemoryRelease(mgr, o, mgr.GetCache().WaitForCacheSync, mgr.GetCache()); err != nil {
		return err
	}
	if err := metrics.RegisterResources(mgr.GetCache(), set.Names(), claims.IsRetained); err != nil {
		return err
	}
	go reportIssuing(ctx, log, set)
	logStart(o, set, bo.SweptRecheck)
	return mgr.Start(ctx)
}

// singleLeaderLock completes l: the Lease lock controller-runtime would
// make for mgr (on a connection of its own, its events mgr's), and a client
// of its own for the member Leases.
func singleLeaderLock(l *shard.UnshardedLock, mgr ctrl.Manager, o Options, scheme *runtime.Scheme, renew time.Duration) error {
	inner, err := leaderelection.NewResourceLock(ownConnection(o.RESTConfig), mgr, leaderelection.Options{
		LeaderElection:          true,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		RenewDeadline:           renew,
	})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	c, err := client.New(ownConnection(o.RESTConfig), client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	l.Interface, l.Client = inner, c
	return nil
}

// logStart logs the settings a run starts with.
func logStart(o Options, set *backends.Set, swept time.Duration) {
	o.Log.Info("starting", "version", version.Version, "installation", set.Installation(), "GOGC", o.GOGC, "backends", set.Names(), "recheckInterval", o.Recheck.String(), "driftSweepInterval", o.DriftSweep.String(), "sweptRecheckInterval", swept.String(), "usageInterval", o.Usage.String(), "backendProbeInterval", o.BackendProbe.String(), "leaderElection", o.LeaderElect, "shards", max(o.Shards, 1))
}

// openBackends opens the config's backends and names the installation
// (the config's, or the cluster's default).
func openBackends(ctx context.Context, o Options, r client.Reader) (*backends.Set, error) {
	set, err := backends.Open(ctx, o.Config)
	if err != nil {
		return nil, err
	}
	if set.Installation() == "" {
		name, err := defaultInstallation(ctx, r)
		if err != nil {
			return nil, errors.Join(err, set.Close())
		}
		set.SetInstallation(name)
	}
	return set, nil
}

// wire sets up, in mgr, both controllers and the leader-only loops of the
// shard serves (nil: all of them, one shard).
func wire(ctx context.Context, mgr ctrl.Manager, o Options, set *backends.Set, serves *shard.Serves) (buckety.Options, error) {
	log := o.Log
	if err := objects.SetupIndexes(ctx, objects.ClusterWide{Cache: mgr.GetCache()}); err != nil {
		return buckety.Options{}, err
	}
	// The kinds without an index get their informers now too, so that
	// every first list runs at once when the caches start: otherwise the
	// controllers' watches start them only after the indexed kinds'
	// caches have synced, one phase of lists after the other.
	for _, obj := range listedAtStart() {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return buckety.Options{}, err
		}
	}
	// One claim store for both kinds: the Buckety controller writes claims,
	// the access controller reads its Buckety's resource name from them.
	store := &claims.Store{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Serves: serves}
	// What wakes an object from outside its controller's watches: the
	// leader's loops, and each controller the other.
	wakes := wake.New()
	// A provisioning pass holds its status for its accesses to read, and
	// wakes them, instead of writing it twice (buckety.Held).
	held := &buckety.Held{}
	bo := buckety.Options{Serves: serves, Backends: set, Claims: store, Recheck: o.Recheck, Wakes: wakes, Controller: controllerOptions(o), Held: held, Backoff: o.RetryBackoff, DrainUnits: o.DrainUnits, OwnerSettle: o.OwnerSettle,
		// Three refreshes: one the service could not give (a bucket listed
		// past its cap) leaves the last figure in place with its time.
		UsageMaxAge: 3 * o.Usage}
	bo.SweptRecheck, bo.ObservedMaxAge = sweepRecheck(o)
	br, err := buckety.SetupWithManager(mgr, bo)
	if err != nil {
		return buckety.Options{}, err
	}
	ar, err := access.SetupWithManager(mgr, access.Options{Serves: serves, Backends: set, Claims: store, Recheck: o.Recheck, Controller: controllerOptions(o), Wakes: wakes, Held: held, LimitRetry: o.LimitRetry})
	if err != nil {
		return buckety.Options{}, err
	}
	if o.DriftSweep > 0 {
		if err := mgr.Add(&access.CredentialSweep{Reconciler: ar, Interval: o.DriftSweep, Wakes: wakes, Log: log.WithName("credential-sweep")}); err != nil {
			return buckety.Options{}, err
		}
	}
	// The loops that act on every Buckety act on their shard's.
	homes := shard.HomeOnly(mgr.GetClient(), serves)
	if err := addSweeper(homes, o, set, wakes, mgr); err != nil {
		return buckety.Options{}, err
	}
	if err := addUsage(homes, o, set, wakes, mgr); err != nil {
		return buckety.Options{}, err
	}
	// One view of the backends: shard 0's.
	if serves == nil || serves.K == 0 {
		if err := addBackendView(mgr, o, set); err != nil {
			return buckety.Options{}, err
		}
	}
	if o.OwnerCheck <= 0 {
		o.OwnerCheck = options.DefaultOwnerCheckInterval
	}
	if err := mgr.Add(&claims.Janitor{Reader: mgr.GetClient(), Store: store, Interval: o.OwnerCheck, Log: log.WithName("claims")}); err != nil {
		return buckety.Options{}, err
	}
	if err := mgr.Add(&access.Orphans{Reconciler: ar, Interval: o.OwnerCheck, Log: log.WithName("credentials")}); err != nil {
		return buckety.Options{}, err
	}
	if err := mgr.Add(&buckety.RecordMarker{Reconciler: br, Serves: serves, Interval: o.OwnerCheck, Log: log.WithName("retained-records")}); err != nil {
		return buckety.Options{}, err
	}
	return bo, nil
}

// reportIssuing asks, once at startup, every backend whose config asks for
// a credential per access whether it can issue them, and logs an error for
// each that cannot (a MinIO release too old to trust, a gateway without an
// IAM store): their accesses wait, with ScopingUnavailable, and no access
// is handed the backend's own credentials. Asked in the background, so an
// unreachable backend does not hold up the others.
func reportIssuing(ctx context.Context, log logr.Logger, set *backends.Set) {
	for _, name := range set.Names() {
		e, ok := set.Get(name)
		if !ok || e.Issuer == nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		sc, err := e.Issuer.Issuing(sctx)
		cancel()
		switch {
		case err != nil:
			log.Info("could not ask the backend whether it issues a credential per access; its accesses will ask again", "backend", name, "error", err.Error())
		case sc.Required && !sc.PerAccess:
			log.Error(errors.New(sc.Reason), "backend refused: its config asks for a credential per access, which it cannot issue; its accesses wait (ScopingUnavailable), and none gets the backend's own credentials", "backend", name)
		}
	}
}

// addHealthChecks serves liveness (the process answers) and readiness (the
// cache has synced) on the probe address.
func addHealthChecks(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("cache", func(_ *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("cache not synced")
		}
		return nil
	})
}

// controllerOptions are both controllers' options. They use client-go's work
// queue, not controller-runtime's priority queue (on by default in v0.24):
// in v0.24.1 the priority queue can deadlock at shutdown (a worker that
// left Get still counts as a waiter, so the hand-out goroutine blocks
// sending to it while holding the lock a finishing worker's Done needs),
// and the manager then overruns its grace period. TestShutdownWithWorkQueued
// reproduces it. The queue hands work out in turns by namespace
// (internal/controller/queue).
func controllerOptions(o Options) controller.Options {
	usePriorityQueue := false
	return controller.Options{
		MaxConcurrentReconciles: o.MaxConcurrent,
		SkipNameValidation:      &o.SkipNameValidation,
		RateLimiter:             rateLimiter(),
		UsePriorityQueue:        &usePriorityQueue,
		NewQueue:                queue.NewFair,
	}
}

// rateLimiter spaces retries of reconciles that returned an error (API
// conflicts, server errors): 100ms doubling to 20s per object, and no
// overall token bucket, which would make a thousand retries take minutes.
// Failures the reconcilers classify themselves use retry.Backoff.
func rateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, retry.TransientMax)
}

// addMemoryRelease adds to mgr, when o.ReleaseMemory, what hands memory
// back to the kernel: the binary's start-up pages once synced reports the
// first cache synced, the start-up collector setting once the Bucketies
// and accesses cached reads then have been reconciled (o.StartupGC;
// startupSettled), and free heap pages after bursts (memory.Releaser).
func addMemoryRelease(mgr ctrl.Manager, o Options, synced func(context.Context) bool, cached client.Reader) error {
	if !o.ReleaseMemory {
		return nil
	}
	if err := mgr.Add(&memory.StartupPages{Synced: synced, Log: o.Log}); err != nil {
		return err
	}
	if o.StartupGC {
		settled := startupSettled(synced, cachedObjects(cached), readStartWork, time.Second)
		if err := mgr.Add(&memory.StartupGC{Settled: settled, Log: o.Log.WithName("memory")}); err != nil {
			return err
		}
	}
	return mgr.Add(&memory.Releaser{Log: o.Log.WithName("memory")})
}
