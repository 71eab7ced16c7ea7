package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/labeller"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// runShards runs this replica's share of o.Shards shards (internal/shard):
// top serves metrics and probes and runs the Assigner, which starts one
// manager per shard held, with a cache of that shard's objects only.
func runShards(ctx context.Context, top ctrl.Manager, o Options, scheme *runtime.Scheme, set *backends.Set) error {
	c, err := client.New(ownConnection(o.RESTConfig), client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	// The resource gauges count what this replica's shards hold.
	readers := &shard.Readers{}
	if err := metrics.RegisterResources(readers, set.Names(), claims.IsRetained); err != nil {
		return err
	}
	// The binary's start-up pages are released once the first shard's
	// cache has synced, and the start-up collector setting ends once what
	// the shards held then has been reconciled.
	firstSynced := make(chan struct{})
	var once sync.Once
	synced := func() { once.Do(func() { close(firstSynced) }) }
	if err := addMemoryRelease(top, o, func(ctx context.Context) bool {
		select {
		case <-firstSynced:
			return true
		case <-ctx.Done():
			return false
		}
	}, readers); err != nil {
		return err
	}
	if err := shard.RegisterMetrics(); err != nil {
		return err
	}
	lease, renew, retry := leaderTimings(o)
	warm := &warmCaches{m: map[int]*warmCache{}}
	a := &shard.Assigner{
		Client: c, Namespace: o.LeaderElectionNamespace, Name: LeaderElectionID,
		Identity: host + "-" + string(uuid.NewUUID())[:8], Shards: o.Shards,
		LeaseDuration: *lease, RenewDeadline: *renew, RetryPeriod: *retry,
		Run: func(ctx context.Context, k int) error {
			return runShard(ctx, o, scheme, set, k, readers, synced, warm.take(k))
		},
		Warm: func(ctx context.Context, k int) { warm.warm(ctx, o, scheme, k) },
		Log:  o.Log.WithName("shards"),
	}
	if err := top.Add(a); err != nil {
		return err
	}
	if err := top.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// A replica is ready whatever it holds: one waiting for a shard is a
	// standby, as a replica waiting for the single leader's Lease is.
	if err := top.AddReadyzCheck("ping", func(*http.Request) error { return nil }); err != nil {
		return err
	}
	go reportIssuing(ctx, o.Log, set)
	logStart(o, set, 0)
	return top.Start(ctx)
}

// runShard runs shard k until ctx ends: both controllers and the
// leader-only loops, over a cache of the shard's objects and of those every
// shard reads (warmed, if not nil: that cache, filled ahead of the take);
// shard 0 also labels objects without a slot and keeps the backends' view.
func runShard(ctx context.Context, o Options, scheme *runtime.Scheme, set *backends.Set, k int, readers *shard.Readers, synced func(), warmed *warmCache) error {
	serves := &shard.Serves{K: k, N: o.Shards}
	o.Log = o.Log.WithValues("shard", k)
	// Every shard's controllers have the same names, in one process.
	o.SkipNameValidation = true
	grace := 30 * time.Second
	// A warm cache taken (take removed it from warmCaches, whose warm no
	// longer stops it) is stopped on every way out: once the manager has
	// started it (adoptedCache.Start) the manager stops it, but a give-up
	// before that (wire's first lists fail when ctx ends before the caches
	// synced, a shard handed back at once) would otherwise leave a whole
	// shard's informers and watches running until the process exits.
	// Stopping it again after the manager did is harmless.
	defer warmed.end()
	co, err := shardCacheOptions(serves)
	if err != nil {
		return err
	}
	mo := ctrl.Options{
		Scheme: scheme, Logger: o.Log,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &grace,
		Cache:                   co,
	}
	if warmed != nil {
		o.Log.Info("taking over the shard's caches, filled since its holder looked gone", "warmedFor", time.Since(warmed.since).Round(time.Millisecond).String())
		mo.NewCache = func(*rest.Config, ctrlcache.Options) (ctrlcache.Cache, error) {
			return adoptedCache{Cache: warmed.cache, stop: warmed.stop}, nil
		}
	}
	// Each shard's caches and workers have a connection of their own, as
	// the Assigner has: on one shared connection a replica's shards' watches
	// wait behind each other and the API server closes them as unresponsive.
	mgr, err := ctrl.NewManager(ownConnection(o.RESTConfig), mo)
	if err != nil {
		return fmt.Errorf("shard %d: create manager: %w", k, err)
	}
	if _, err := wire(ctx, mgr, o, set, serves); err != nil {
		return err
	}
	if k == 0 {
		if err := mgr.Add(&labeller.Labeller{Config: o.RESTConfig, Scheme: scheme, Client: mgr.GetClient(), Log: o.Log.WithName("labeller")}); err != nil {
			return err
		}
	}
	go func() {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return
		}
		readers.Set(k, shard.HomeOnly(mgr.GetClient(), serves))
		synced()
		<-ctx.Done()
		readers.Set(k, nil)
	}()
	return mgr.Start(ctx)
}

// warmCaches are the caches of the shards this replica is about to take
// (shard.Assigner.Warm): a dead replica's shard is taken when its Lease
// expires, and the taker's caches then list the shard's objects, which at
// 100,000 Bucketies took most of the time to the shard's first passes.
// Filled from the moment the holder looks gone, they are listed by the
// expiry, or nearly, and runShard takes them over. A warm cache the shard
// is not taken with (its holder renewed it, another replica took it) is
// stopped.
type warmCaches struct {
	mu sync.Mutex
	m  map[int]*warmCache
}

// warmCache is one shard's cache, started ahead of its take.
type warmCache struct {
	since time.Time
	// ready is closed once cache and stop are set, or the cache could
	// not be made (cache nil).
	ready chan struct{}
	cache ctrlcache.Cache
	// stop ends the cache's informers.
	stop context.CancelFunc
}

// end stops c's informers, if c is not nil and its cache was made.
func (c *warmCache) end() {
	if c != nil && c.stop != nil {
		c.stop()
	}
}

// warm starts filling a cache of shard k's objects, until ctx ends; then
// it is stopped unless runShard has taken it over. It returns at once,
// with the cache registered for take.
func (w *warmCaches) warm(ctx context.Context, o Options, scheme *runtime.Scheme, k int) {
	log := o.Log.WithName("shards").WithValues("shard", k)
	wc := &warmCache{since: time.Now(), ready: make(chan struct{})}
	w.mu.Lock()
	old := w.m[k]
	w.m[k] = wc
	w.mu.Unlock()
	if old != nil {
		go func() {
			<-old.ready
			old.end()
		}()
	}
	go func() {
		cctx, stop := context.WithCancel(context.Background())
		c, err := newShardCache(o, scheme, k)
		if err != nil {
			log.Error(err, "could not warm the shard's caches")
			stop()
			w.mu.Lock()
			if w.m[k] == wc {
				delete(w.m, k)
			}
			w.mu.Unlock()
			close(wc.ready)
			return
		}
		wc.cache, wc.stop = c, stop
		close(wc.ready)
		go func() {
			if err := c.Start(cctx); err != nil {
				log.Error(err, "a warm cache stopped")
			}
		}()
		for _, obj := range listedAtStart() {
			if _, err := c.GetInformer(cctx, obj, ctrlcache.BlockUntilSynced(false)); err != nil {
				log.Error(err, "could not warm the shard's caches", "kind", fmt.Sprintf("%T", obj))
			}
		}
		<-ctx.Done()
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.m[k] == wc {
			delete(w.m, k)
			stop()
		}
	}()
}

// newShardCache is the cache a shard's manager makes (shardCacheOptions),
// on a connection of its own.
func newShardCache(o Options, scheme *runtime.Scheme, k int) (ctrlcache.Cache, error) {
	co, err := shardCacheOptions(&shard.Serves{K: k, N: o.Shards})
	if err != nil {
		return nil, err
	}
	co.Scheme = scheme
	return ctrlcache.New(ownConnection(o.RESTConfig), co)
}

// take hands shard k's warm cache, if there is one, to the caller, who
// stops it (end): nil if there is none, or it could not be made.
func (w *warmCaches) take(k int) *warmCache {
	w.mu.Lock()
	wc := w.m[k]
	delete(w.m, k)
	w.mu.Unlock()
	if wc == nil {
		return nil
	}
	<-wc.ready
	if wc.cache == nil {
		return nil
	}
	return wc
}

// adoptedCache is a warm cache as a shard's manager's cache: started
// already, so its Start only waits for the manager to stop, then stops it.
type adoptedCache struct {
	ctrlcache.Cache
	stop context.CancelFunc
}

func (a adoptedCache) Start(ctx context.Context) error {
	<-ctx.Done()
	a.stop()
	return nil
}

// shardCacheOptions are cacheOptions with buckety's kinds and Secrets
// selected by the shard's slots, and the objects every shard reads.
func shardCacheOptions(s *shard.Serves) (ctrlcache.Options, error) {
	o := cacheOptions()
	sel, err := shard.Selecting(s)
	if err != nil {
		return o, err
	}
	secrets, err := shard.ManagedSecrets(s)
	if err != nil {
		return o, err
	}
	o.ByObject = map[client.Object]ctrlcache.ByObject{
		&corev1.Secret{}:        {Label: secrets, Transform: stripSecret},
		&v1.Buckety{}:           {Label: sel},
		&v1.BucketyAccess{}:     {Label: sel},
		&v1.BucketyClaim{}:      {Label: sel},
		&v1.BucketyCredential{}: {Label: sel},
	}
	return o, nil
}

// ownConnection is cfg with a transport of its own. client-go shares one
// transport, and so one HTTP/2 connection, between every client built from
// equal configs: the Lease client's renewals and each shard's watches would
// otherwise wait behind everything else the replica sends on it. A config
// with a dial function is never shared (client-go's transport cache keys on
// a holder made afresh for each client), so one that has a dial function
// already keeps it.
func ownConnection(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return cfg
}
