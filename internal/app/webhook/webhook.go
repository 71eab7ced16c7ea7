// Package webhook is the buckety-webhook binary: a separate, horizontally
// scaled admission webhook that validates Buckety and BucketyAccess with the
// same config file as the controller, loaded without credentials, so tenants
// get admission errors even while the controller is scaled to zero.
package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/Yolean/buckety-controller/drivers/all"
	bucketyadmission "github.com/Yolean/buckety-controller/internal/admission"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/app/crds"
	"github.com/Yolean/buckety-controller/internal/app/webhook/options"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/kubeconfig"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/runtime/pagedcache"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/internal/version"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies,verbs=list;watch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Paths the webhook serves: the ValidatingWebhookConfiguration names the
// validators', the MutatingWebhookConfiguration the admitters' (a create's
// verdict and stamp, admission.Admit). The admitters have paths of their
// own: while a release rolls out, a replica of an older release, whose
// mutating handler at the stamp paths only stamped, answers the new paths
// 404, and the create is refused (failurePolicy Fail) rather than stored
// stamped and unjudged, which the validating webhooks would then skip.
// The stamp paths serve the admitters too, for the older release's
// configuration in the same window (the create then judged twice).
const (
	PathBuckety      = "/validate-buckety-yolean-se-v1alpha1-buckety"
	PathAccess       = "/validate-buckety-yolean-se-v1alpha1-bucketyaccess"
	PathAdmitBuckety = "/admit-buckety-yolean-se-v1alpha1-buckety"
	PathAdmitAccess  = "/admit-buckety-yolean-se-v1alpha1-bucketyaccess"
	PathStampBuckety = "/mutate-buckety-yolean-se-v1alpha1-buckety"
	PathStampAccess  = "/mutate-buckety-yolean-se-v1alpha1-bucketyaccess"
)

// Options configure a webhook run.
type Options struct {
	// Flags are the command line's values.
	options.Flags
	Config     *config.Config
	RESTConfig *rest.Config
	Log        logr.Logger
}

// metricsOptions serves metrics with authentication and authorization (the
// kubebuilder default) unless insecure.
func metricsOptions(addr string, insecure bool) (metricsserver.Options, error) {
	if insecure {
		return metricsserver.Options{BindAddress: addr}, nil
	}
	return metrics.SecureOptions(addr, filters.WithAuthenticationAndAuthorization)
}

// Main runs the command with args (without the program name) and returns
// the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	var o Options
	fs := options.NewFlagSet(stderr, &o.Flags)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := o.RateLimit.Validate(); err != nil {
		fmt.Fprintf(stderr, "buckety-webhook: %v\n", err)
		return 2
	}
	if o.Version {
		fmt.Fprintf(stdout, "buckety-webhook %s\n", version.Version)
		return 0
	}
	cfg, err := config.Load(o.ConfigDir, config.Options{Registry: all.Registry(), WithoutCredentials: true})
	if err != nil {
		fmt.Fprintf(stderr, "buckety-webhook: invalid configuration: %v\n", err)
		return 1
	}
	o.Config = cfg
	o.Log = zap.New(zap.UseFlagOptions(&o.Zap), zap.WriteTo(stderr))
	ctrl.SetLogger(o.Log)
	klog.SetLogger(o.Log)
	for _, n := range cfg.Notices() {
		o.Log.Info(n) // config.Notices: an older spelling, a backend without a name policy beside one with
	}
	if o.RESTConfig, err = restConfig(o.Flags); err != nil {
		fmt.Fprintf(stderr, "buckety-webhook: %v\n", err)
		return 1
	}
	if err := Run(signalContext(), o); err != nil {
		fmt.Fprintf(stderr, "buckety-webhook: %v\n", err)
		return 1
	}
	return 0
}

// signalContext is cancelled on SIGTERM or SIGINT.
func signalContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-ch
		cancel()
		<-ch
		os.Exit(1)
	}()
	return ctx
}

// Run serves admission until ctx ends. Then it reports not ready, turns
// keep-alives off so clients move to other replicas (see server), keeps
// serving for ShutdownDelay, and stops gracefully, finishing in-flight
// requests.
func Run(ctx context.Context, o Options) error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return err
	}
	// The Buckety and access caches need buckety's kinds served; on a
	// first install they may be a moment behind this Pod (internal/app/crds).
	if err := crds.WaitServed(ctx, o.RESTConfig, scheme, v1.GroupVersion, o.Log); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while waiting: a clean stop
		}
		return err
	}
	// The serving certificate is watched here rather than inside the
	// webhook server, so each (re)load also sets the expiry gauge.
	certs, err := certwatcher.New(filepath.Join(o.CertDir, "tls.crt"), filepath.Join(o.CertDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("load the serving certificate: %w", err)
	}
	certs.RegisterCallback(func(c tls.Certificate) {
		if err := recordExpiry(c); err != nil {
			o.Log.Error(err, "serving certificate: cannot read its expiry")
		}
	})
	grace := 30 * time.Second
	srv := newServer(o.Host, o.Port, certs.GetCertificate, o.ReusePort, o.Log.WithName("admission"))
	mo, err := metricsOptions(o.MetricsAddr, o.MetricsInsecure)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(o.RESTConfig, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  o.Log,
		Metrics:                 mo,
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		GracefulShutdownTimeout: &grace,
		WebhookServer:           srv,
		// The cache fills by lists in pages: a replica starting beside
		// 100,000 Bucketies whose watch-list stream the API server closes
		// as unresponsive would start it again for as long as the kind is
		// busy (internal/runtime/pagedcache).
		Cache: cache.Options{NewInformer: pagedcache.NewInformer, ByObject: map[client.Object]cache.ByObject{
			&v1.Buckety{}:       {Transform: bucketyadmission.StripBucketyCounting(o.Config)},
			&v1.BucketyAccess{}: {Transform: bucketyadmission.StripAccess},
		}},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.Add(certs); err != nil {
		return err
	}
	validators, err := bucketyadmission.New(o.Config, bucketyadmission.CacheLookup(mgr.GetCache()))
	if err != nil {
		return err
	}
	validators.WithCounter(bucketyadmission.CacheCounter(mgr.GetCache()))
	validators.WithAccessCounter(bucketyadmission.CacheAccessCounter(mgr.GetCache()))
	validators.WithBudgetCounter(bucketyadmission.CacheBudgetCounter(mgr.GetCache()))
	validators.WithNamespaceLabels(bucketyadmission.CacheNamespaceLabels(mgr.GetCache()))
	// GetWebhookServer is what adds the server to the manager's runnables.
	if mgr.GetWebhookServer() != webhook.Server(srv) {
		return errors.New("the manager does not serve the admission server it was given")
	}
	bh := admission.WithValidator[*v1.Buckety](scheme, bucketyadmission.BucketyValidator{Validators: validators})
	bh.Handler = counted("Buckety", bh.Handler)
	srv.Register(PathBuckety, bh)
	ah := admission.WithValidator[*v1.BucketyAccess](scheme, bucketyadmission.AccessValidator{Validators: validators})
	ah.Handler = counted("BucketyAccess", ah.Handler)
	srv.Register(PathAccess, ah)
	// A create's one call: the verdict and the stamp (bucketyadmission.Admit);
	// the validators above judge updates, and a create Admit left to the
	// schema.
	decoder := admission.NewDecoder(scheme)
	bv, av := bucketyadmission.BucketyValidator{Validators: validators}, bucketyadmission.AccessValidator{Validators: validators}
	admitBuckety := counted("Buckety", bucketyadmission.Admit[*v1.Buckety]{
		Kind: "Buckety", Decoder: decoder, New: func() *v1.Buckety { return &v1.Buckety{} },
		Slot: shard.BucketyValue, Validate: bv.ValidateCreate,
	})
	admitAccess := counted("BucketyAccess", bucketyadmission.Admit[*v1.BucketyAccess]{
		Kind: "BucketyAccess", Decoder: decoder, New: func() *v1.BucketyAccess { return &v1.BucketyAccess{} },
		Slot: shard.AccessValue, Validate: av.ValidateCreate,
	})
	for path, h := range map[string]admission.Handler{PathAdmitBuckety: admitBuckety, PathStampBuckety: admitBuckety, PathAdmitAccess: admitAccess, PathStampAccess: admitAccess} {
		srv.Register(path, &admission.Webhook{Handler: h})
	}

	var draining atomic.Bool
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", srv.StartedChecker()); err != nil {
		return err
	}
	// Start the Buckety informer with the manager, so the first admission
	// of an access does not wait for it; readiness waits for its sync.
	informer, err := mgr.GetCache().GetInformer(ctx, &v1.Buckety{})
	if err != nil {
		return err
	}
	accessInformer, err := mgr.GetCache().GetInformer(ctx, &v1.BucketyAccess{})
	if err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("cache", func(*http.Request) error {
		if !informer.HasSynced() || !accessInformer.HasSynced() {
			return errors.New("the Buckety and BucketyAccess caches are not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("draining", func(*http.Request) error {
		if draining.Load() {
			return errors.New("shutting down")
		}
		return nil
	}); err != nil {
		return err
	}
	mgrCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		<-ctx.Done()
		draining.Store(true)
		srv.Drain()
		o.Log.Info("shutting down: not ready, moving clients to other replicas, serving for the shutdown delay", "delay", o.ShutdownDelay.String())
		time.Sleep(o.ShutdownDelay)
		stop()
	}()
	o.Log.Info("starting", "version", version.Version, "backends", o.Config.BackendNames(), "port", o.Port, "certDir", o.CertDir)
	return mgr.Start(mgrCtx)
}

// restConfig loads the kubeconfig f names and applies the rate limit and
// the compression setting.
func restConfig(f options.Flags) (*rest.Config, error) {
	return kubeconfig.LoadWith(f.Kubeconfig, f.RateLimit, f.Compression)
}
