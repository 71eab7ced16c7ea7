package access

import (
	"context"
	"maps"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/queue"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/internal/controller/status"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// ControllerName names the BucketyAccess controller (in logs and metrics).
const ControllerName = "bucketyaccess"

// Options configure the BucketyAccess controller.
type Options struct {
	// Serves is the shard this controller reconciles; nil: every
	// namespace (one shard).
	Serves *shard.Serves
	// Backends are the open backends of the controller config.
	Backends *backends.Set
	// Claims is the claim store, shared with the Buckety controller.
	Claims *claims.Store
	// Recheck is the Reconciler's field of that name.
	Recheck time.Duration
	// Controller are the controller's options: workers, rate limiter, queue.
	Controller controller.Options
	// Held is shared with the Buckety controller (Reconciler.Held).
	Held HeldStatus
	// LimitRetry is the Reconciler's field of that name.
	LimitRetry time.Duration
	// Wakes, shared with the Buckety controller and the leader's loops,
	// wakes the accesses the credential sweep found drifted and those
	// whose Buckety holds a status they should read; nil: none.
	Wakes *wake.Channels
}

// SetupWithManager builds the BucketyAccess reconciler and registers its
// controller with mgr. What wakes an access:
//
//   - a change to the access, but not the watch events of this
//     controller's own status and finalizer writes, unless a reconcile
//     skipped for a stale cache waits for them (status.Written);
//   - a change to the Secret it owns (an edit or deletion is repaired),
//     but not the watch event of this controller's own write of it
//     (ownSecretWrites);
//   - a change to the Buckety it names (bucketyToAccesses, through the
//     objects.IndexBucketyRef index): it waits for the Buckety's resource,
//     and its grant follows the Buckety's parameters; its creation and
//     deletion, and of its updates only those that change what an access
//     reads of it (concernsAccesses), not its Ready, which turns with
//     its accesses;
//   - the credential sweep finding its principal drifted
//     (wake.CredentialDrifted);
//   - a change to the labels or the deletion of its namespace, or of the
//     namespace of the Buckety it names in another (the consent of the
//     owner, spec.sharing, may select it no more; an access waiting for
//     its namespace's access limit may have more room under a limit a
//     label selects: namespaceToAccesses);
//   - its Buckety holding a provisioned status back for it
//     (wake.ProvisionedFor, buckety.Held);
//   - its own requeue: the re-check, a retry, a Secret conflict, a
//     credential to retire or rotate.
func SetupWithManager(mgr manager.Manager, o Options) (*Reconciler, error) {
	r := &Reconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Backends:   o.Backends,
		Claims:     o.Claims,
		Recorder:   mgr.GetEventRecorder(status.EventReporter),
		Recheck:    o.Recheck,
		Backoff:    &retry.Backoff{},
		Written:    &status.Written{},
		Held:       o.Held,
		LimitRetry: o.LimitRetry,
		Serves:     o.Serves,
		Breaker:    &retry.Breaker{},
	}
	notSettled, settledLater := queue.SettledLater(objects.AccessSettled)
	b := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1.BucketyAccess{}, builder.WithPredicates(notSettled, r.Written.DropEchoes(v1.Finalizer, shard.SlotLabel))).
		Watches(&v1.BucketyAccess{}, settledLater)
	for _, s := range o.Wakes.AccessSources() {
		b = b.WatchesRawSource(s)
	}
	err := b.
		// Metadata only: Secrets a tenant labels as buckety's are in the
		// cache too, and must not cost their data in memory. Owned as
		// Owns would, but the initial list's queue no work ahead of the
		// changed accesses (queue.LaterAtStart); nor do the Bucketies'.
		Watches(&corev1.Secret{}, ownSecrets(mgr.GetScheme(), mgr.GetRESTMapper()), builder.OnlyMetadata, builder.WithPredicates(r.ownSecretWrites())).
		Watches(&v1.Buckety{}, bucketyWakes(mgr.GetClient(), mgr.GetLogger()),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: concernsAccesses})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(namespaceToAccesses(mgr)),
			builder.WithPredicates(objects.UpdatesWhere(consentOrLimitsMayChange))).
		WithOptions(o.Controller).
		Complete(shard.Only(r, o.Serves))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ownSecrets queues the access that controls a Secret, as the builder's
// Owns does; the initial list's Secrets queue it as low-priority work
// (queue.LaterAtStart): the access's own event queues it as ordinary
// work if it needs a pass.
func ownSecrets(scheme *runtime.Scheme, mapper meta.RESTMapper) handler.EventHandler {
	return queue.LaterAtStart(handler.EnqueueRequestForOwner(scheme, mapper, &v1.BucketyAccess{}, handler.OnlyControllerOwner()), nil)
}

// bucketyWakes queues the accesses of a Buckety (bucketyToAccesses); the
// initial list's settled Bucketies queue them as low-priority work
// (queue.LaterAtStart), an unsettled one as ordinary work.
func bucketyWakes(c client.Reader, log logr.Logger) handler.EventHandler {
	return queue.LaterAtStart(handler.EnqueueRequestsFromMapFunc(bucketyToAccesses(c, log)), objects.BucketySettled)
}

// consentOrLimitsMayChange: a namespace's labels changed (a sharing rule
// or the backend's sharing.namespaceSelector may select it no more, or
// now; limits.namespaces may give it other access limits), or its
// deletion began (its Bucketies share nothing any more).
func consentOrLimitsMayChange(e event.UpdateEvent) bool {
	return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
		e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// concernsAccesses: a Buckety update changed something its accesses
// read (readByAccesses). A status write that changes only what the
// Buckety reports of its accesses and its own state (Ready, Reconciling,
// ScopingNotImplemented, status.sharedWith, usage, drain) wakes none: an
// access over 128 Bucketies would otherwise be woken by each of them
// turning Ready=False and True again as it is granted.
func concernsAccesses(e event.UpdateEvent) bool {
	o, ok := e.ObjectOld.(*v1.Buckety)
	n, ok2 := e.ObjectNew.(*v1.Buckety)
	if !ok || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(readByAccesses(o), readByAccesses(n))
}

// bucketyAsRead is what the access reconciler reads of a Buckety: whether
// it is being deleted, its spec (backend, parameters, sharing rules), the
// backend and resource its status records, the defaults its parameters
// merge over, and its Provisioned condition (what an access waits for),
// as of its generation.
type bucketyAsRead struct {
	UID                                    types.UID
	Generation                             int64
	Deleting                               bool
	Labels                                 map[string]string
	Spec                                   v1.BucketySpec
	Backend, Driver, Resource              string
	DriverMajor                            *int64
	Provenance                             v1.Provenance
	ParameterDefaults, EffectiveParameters map[string]string
	Provisioned                            metav1.Condition
}

func readByAccesses(b *v1.Buckety) bucketyAsRead {
	out := bucketyAsRead{
		UID: b.UID, Generation: b.Generation, Deleting: !b.DeletionTimestamp.IsZero(), Labels: b.Labels, Spec: b.Spec,
		Backend: b.Status.Backend, Driver: b.Status.Driver, Resource: b.Status.BackendResourceName, DriverMajor: b.Status.DriverMajor,
		Provenance: b.Status.Provenance, ParameterDefaults: b.Status.ParameterDefaults, EffectiveParameters: b.Status.EffectiveParameters,
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionProvisioned); c != nil {
		out.Provisioned = *c
		out.Provisioned.LastTransitionTime = metav1.Time{} // moves only with its status
	}
	return out
}

// namespaceToAccesses maps a namespace to the accesses whose consent or
// limits depend on it: its own accesses to other namespaces' Bucketies
// and those waiting for an access limit (LimitExceeded), and the accesses
// of other namespaces to its Bucketies. Read from the cache.
func namespaceToAccesses(mgr manager.Manager) handler.MapFunc {
	c, log := mgr.GetClient(), mgr.GetLogger()
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		ns := obj.GetName()
		var out []reconcile.Request
		add := func(as []v1.BucketyAccess, waiting bool) {
			for i := range as {
				if as[i].AnyForeign() || waiting && waitsForLimit(&as[i]) {
					out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&as[i])})
				}
			}
		}
		var own v1.BucketyAccessList
		if err := c.List(ctx, &own, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			log.Error(err, "list the accesses of namespace", "namespace", ns)
			return nil
		}
		add(own.Items, true)
		var bs v1.BucketyList
		if err := c.List(ctx, &bs, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			log.Error(err, "list the Bucketies of namespace", "namespace", ns)
			return out
		}
		for i := range bs.Items {
			as, err := objects.AccessesOf(ctx, c, ns, bs.Items[i].Name, client.UnsafeDisableDeepCopy)
			if err != nil {
				log.Error(err, "list accesses of Buckety", "buckety", ns+"/"+bs.Items[i].Name)
				continue
			}
			add(as, false)
		}
		return out
	}
}

// bucketyToAccesses maps a Buckety to the accesses that name it, read from
// the cache by the objects.IndexBucketyRef index.
func bucketyToAccesses(c client.Reader, log logr.Logger) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		// Only names are read: the cache's own objects, not copies.
		list, err := objects.AccessesOf(ctx, c, obj.GetNamespace(), obj.GetName(), client.UnsafeDisableDeepCopy)
		if err != nil {
			log.Error(err, "list accesses of Buckety", "buckety", obj.GetNamespace()+"/"+obj.GetName())
			return nil
		}
		out := make([]reconcile.Request, len(list))
		for i, a := range list {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: a.Namespace, Name: a.Name}}
		}
		return out
	}
}

// waitsForLimit reports whether access a waits for an access limit.
func waitsForLimit(a *v1.BucketyAccess) bool {
	c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Reason == v1.ReasonLimitExceeded
}
