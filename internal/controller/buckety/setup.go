package buckety

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

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

// ControllerName names the Buckety controller (in logs and metrics).
const ControllerName = "buckety"

// releasedBuffer is how many woken Bucketies may wait to be enqueued; a
// deletion that releases a claim blocks on a full buffer, not drops.
const releasedBuffer = 64

// Options configure the Buckety controller.
type Options struct {
	// Serves is the shard this controller reconciles; nil: every
	// namespace (one shard).
	Serves *shard.Serves
	// Backends are the open backends of the controller config.
	Backends *backends.Set
	// Claims is the claim store, shared with the access controller.
	Claims *claims.Store
	// Recheck, SweptRecheck and ObservedMaxAge are the Reconciler's fields
	// of those names.
	Recheck, SweptRecheck, ObservedMaxAge time.Duration
	// Held is shared with the access controller (Reconciler.Held); nil
	// holds no status.
	Held *Held
	// Wakes, shared with the access controller and the leader's loops,
	// wakes Bucketies the drift sweep found drifted and those whose
	// QuotaWarning the usage refresh found changed, and is the
	// Reconciler's field of that name; nil: none.
	Wakes *wake.Channels
	// Controller are the controller's options: workers, rate limiter, queue.
	Controller controller.Options
	// Backoff is the Reconciler's field of that name; nil: the defaults.
	Backoff *retry.Backoff
	// DrainUnits is the Reconciler's field of that name.
	DrainUnits int
	// OwnerSettle is the Reconciler's field of that name.
	OwnerSettle time.Duration
	// UsageMaxAge is the Reconciler's field of that name.
	UsageMaxAge time.Duration
	// Breaker is the Reconciler's field of that name; nil: one with the
	// defaults.
	Breaker *retry.Breaker
}

// SetupWithManager builds the Buckety reconciler and registers its
// controller with mgr. What wakes a Buckety:
//
//   - a change to the Buckety, but not the watch events of this
//     controller's own status and finalizer writes, unless a reconcile
//     skipped for a stale cache waits for them (status.Written);
//   - a change to a BucketyAccess naming it (accessToBuckety): its
//     accesses' readiness is part of its Ready, the implicit access is its
//     to keep, and its deletion waits for them;
//   - a claim released (a Buckety deleted, or a claim given up), when it
//     waits for that name or for room under its namespace's limit on the
//     backend (Reconciler.Released, Reconciler.Waiters): only the
//     Bucketies waiting for that release;
//   - the drift sweep finding its resource drifted (wake.BucketyDrifted);
//   - a change to its namespace's labels, when it waits for room under
//     its namespace's limits and a backend chooses limits by namespace
//     label (namespaceToWaiting);
//   - the usage refresher finding its QuotaWarning changed
//     (wake.QuotaWarningChanged); a write of status.usage alone does not wake
//     it (UsageOnly);
//   - its own requeue: the drift re-check, a retry, a deletion pass.
func SetupWithManager(mgr manager.Manager, o Options) (*Reconciler, error) {
	released := make(chan event.GenericEvent, releasedBuffer)
	if o.Backoff == nil {
		o.Backoff = &retry.Backoff{}
	}
	if o.Breaker == nil {
		o.Breaker = &retry.Breaker{}
	}
	r := &Reconciler{
		Client:         mgr.GetClient(),
		Backends:       o.Backends,
		Claims:         o.Claims,
		Recorder:       mgr.GetEventRecorder(status.EventReporter),
		Recheck:        o.Recheck,
		SweptRecheck:   o.SweptRecheck,
		ObservedMaxAge: o.ObservedMaxAge,
		Backoff:        o.Backoff,
		Written:        &status.Written{},
		Released:       released,
		Waiters:        &retry.Waiters{},
		Held:           o.Held,
		Wakes:          o.Wakes,
		APIReader:      mgr.GetAPIReader(),
		DrainUnits:     o.DrainUnits,
		OwnerSettle:    o.OwnerSettle,
		UsageMaxAge:    o.UsageMaxAge,
		Breaker:        o.Breaker,
	}
	notSettled, settledLater := queue.SettledLater(objects.BucketySettled)
	b := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1.Buckety{}, builder.WithPredicates(UsageOnly(), notSettled, r.Written.DropEchoes(v1.Finalizer, shard.SlotLabel))).
		Watches(&v1.Buckety{}, settledLater).
		WatchesRawSource(source.Channel(released, &handler.EnqueueRequestForObject{}))
	for _, s := range o.Wakes.BucketySources() {
		b = b.WatchesRawSource(s)
	}
	if selectsByLabel(o.Backends) {
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(namespaceToWaiting(mgr)),
			builder.WithPredicates(namespaceRelabelled()))
	}
	err := b.Watches(&v1.Buckety{}, heldRecorded(r.Held)).
		Watches(&v1.BucketyAccess{}, accessWakes()).
		Watches(&v1.BucketyClaim{}, claimReleased(r.Waiters)).
		WithOptions(o.Controller).
		Complete(shard.Only(r, o.Serves))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// heldRecorded drops a held status once the cache shows it recorded
// (Held.Recorded), or the Buckety gone; it queues nothing.
func heldRecorded(h *Held) handler.Funcs {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if b, ok := e.ObjectNew.(*v1.Buckety); ok {
				h.Recorded(b)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.Object != nil {
				h.Forget(client.ObjectKeyFromObject(e.Object))
			}
		},
	}
}

// claimReleased wakes, when a claim's deletion reaches the cache, the
// Bucketies waiting for its name or for room under its namespace's limit;
// and when a claim turning retained (its Buckety deleted with Retain)
// reaches the cache, those waiting for its name, which may now take it
// over (a retained claim still counts under the limit). Reconcile's own
// wake (Reconciler.Released) is sooner but may run before the cache has
// seen the change, and the waiter reads the claim from the cache: this
// second wake finds it updated. Without it, a waiter woken too early saw
// the claim still held, waited again, and was never woken.
func claimReleased(w *retry.Waiters) handler.Funcs {
	wake := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], keys ...string) {
		for _, k := range keys {
			for _, nn := range w.Waiting(k) {
				q.Add(reconcile.Request{NamespacedName: nn})
			}
		}
	}
	return handler.Funcs{
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if cl, ok := e.Object.(*v1.BucketyClaim); ok {
				wake(q, claimKey(cl.Name), limitKey(cl.Spec.Backend, cl.Spec.Owner.Namespace))
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok1 := e.ObjectOld.(*v1.BucketyClaim)
			cl, ok2 := e.ObjectNew.(*v1.BucketyClaim)
			if ok1 && ok2 && !claims.IsRetained(old) && claims.IsRetained(cl) {
				wake(q, claimKey(cl.Name))
			}
		},
	}
}

// NewAccessWake is how long after a new access is created its Bucketies
// are woken: by then it is usually granted, so their one pass finds it
// Ready and writes nothing (a Ready Buckety holds its status for a pending
// access anyway, Held), and an access over many Bucketies is not slowed by
// a pass of each of them while it is granted.
const NewAccessWake = 2 * time.Second

// newAccessAge is how old an access may be for its create event to count
// as new (delayed): the create events the cache sends at start, of
// accesses that existed before, wake their Bucketies at once, together
// with the Bucketies' own events, not in a second pass.
const newAccessAge = time.Minute

// accessWakes wakes the Bucketies an access names (accessToBuckety):
// NewAccessWake after a new access is created; at once on its deletion,
// and on an update that changes more than its finalizers, slot label and
// bookkeeping (the first pass's finalizer patch changes nothing the
// Buckety reads); old and new refs both. At a start, a settled access of
// the initial list queues its Bucketies as low-priority work
// (queue.LaterAtStart), as their own settled events do: were it ordinary
// work, every settled Buckety with an access would be re-checked ahead of
// a changed one.
func accessWakes() handler.EventHandler {
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], after time.Duration, objs ...client.Object) {
		for _, o := range objs {
			for _, r := range accessToBuckety(ctx, o) {
				if after > 0 {
					q.AddAfter(r, after)
				} else {
					q.Add(r)
				}
			}
		}
	}
	return queue.LaterAtStart(handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			after := time.Duration(0)
			if time.Since(e.Object.GetCreationTimestamp().Time) < newAccessAge {
				after = NewAccessWake
			}
			add(ctx, q, after, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if onlyBookkeeping(e.ObjectOld, e.ObjectNew) {
				return
			}
			add(ctx, q, 0, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, 0, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, 0, e.Object)
		},
	}, objects.AccessSettled)
}

// onlyBookkeeping reports whether two versions of an access differ only in
// their finalizers, slot label, resourceVersion and managedFields, while
// not being deleted.
func onlyBookkeeping(oldObj, newObj client.Object) bool {
	o, ok1 := oldObj.(*v1.BucketyAccess)
	n, ok2 := newObj.(*v1.BucketyAccess)
	if !ok1 || !ok2 || !n.DeletionTimestamp.IsZero() {
		return false
	}
	strip := func(a *v1.BucketyAccess) *v1.BucketyAccess {
		c := a.DeepCopy()
		c.ResourceVersion, c.ManagedFields, c.Finalizers = "", nil, nil
		delete(c.Labels, shard.SlotLabel)
		if len(c.Labels) == 0 {
			c.Labels = nil
		}
		return c
	}
	return equality.Semantic.DeepEqual(strip(o), strip(n))
}

// accessToBuckety maps a BucketyAccess to the Bucketies it names.
func accessToBuckety(_ context.Context, obj client.Object) []reconcile.Request {
	a := obj.(*v1.BucketyAccess)
	refs := a.Refs()
	out := make([]reconcile.Request, len(refs))
	for i, ref := range refs {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKey{Namespace: a.RefNamespace(ref), Name: ref.Name}}
	}
	return out
}
