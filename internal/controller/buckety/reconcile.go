package buckety

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/budget"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/internal/controller/status"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
	"github.com/Yolean/buckety-controller/internal/naming"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies/status,verbs=patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies/finalizers,verbs=update
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles Buckety objects. SetupWithManager builds it and the
// controller that feeds it; tests build it directly.
type Reconciler struct {
	// Client is the manager's (cached) client.
	Client ctrl.Client
	// owners remembers the owner records this process read or wrote
	// (owners.go).
	owners ownerMemo
	// Backends are the open backends of the controller config.
	Backends *backends.Set
	// Claims is the controller's record of which Buckety owns which backend
	// resource; destructive actions trust only it.
	Claims *claims.Store
	// Recorder records events on Bucketies; nil records none.
	Recorder events.EventRecorder
	// Recheck is the period of the drift re-check (jittered).
	Recheck time.Duration
	// SweptRecheck, when set, replaces Recheck for Bucketies on a backend
	// whose drift sweep sees everything Ensure acts on (see sweep.go): a
	// long safety net.
	SweptRecheck time.Duration
	// ObservedMaxAge, when set, is the drivers.Resource.MaxAge of Ensure on
	// backends whose drift sweep is complete: the sweep interval, since the
	// sweep bounds how long drift goes unseen (see sweep.go).
	ObservedMaxAge time.Duration
	// Backoff spaces retries after failures, independent of Recheck.
	Backoff *retry.Backoff
	// Written skips reconciles that start from a cache older than this
	// controller's own last write to the object; nil skips none.
	Written *status.Written
	// Released, when set, receives the Bucketies waiting for a claim that
	// was released (Ready reason NameConflict for its name, or
	// LimitExceeded in its owner's namespace), so they retry at once
	// instead of on their backoff.
	Released chan<- event.GenericEvent
	// Waiters remembers which Bucketies wait for which release.
	Waiters *retry.Waiters
	// Held, when set, holds the status of a pass that provisioned the
	// resource while only its accesses are left, shared with the access
	// reconciler, which reads it as recorded (hold.go); nil writes the
	// status in every pass.
	Held *Held
	// Wakes, when set, takes to the access controller the accesses a held
	// status concerns, which no status write wakes (ProvisionedFor).
	Wakes *wake.Channels
	// APIReader reads around the cache where it may lag this controller's
	// own writes (an implicit access created by the pass before); nil
	// reads the cache.
	APIReader ctrl.Reader
	// Now is the clock of drains (drain.go); nil: time.Now.
	Now func() time.Time
	// DrainUnits bounds one drain step (drivers.DrainLimits.Units); 0:
	// the driver's default.
	DrainUnits int
	// Breaker holds back the passes of Bucketies whose backend stopped
	// answering (breaker.go); nil holds none back.
	Breaker *retry.Breaker
	// OwnerSettle is how long an existing resource must stay without an
	// owner record before it is adopted (settleUnrecorded); 0: 5 s.
	OwnerSettle time.Duration
	// UsageMaxAge is how old status.usage may be and still say what a
	// bucket holds for its budget (budget.FreshUsage); 0: it never does
	// (usage is not measured), and a lowered quota keeps counting what it
	// counted before.
	UsageMaxAge time.Duration

	mu sync.Mutex
	// deleted is what each deletion in progress removed so far, by
	// Buckety name (addDeleted).
	deleted map[types.NamespacedName]deletedSoFar
	// lowered are the lowered quotas passes found, by Buckety name
	// (usageAfterLowering, forgetLowering).
	lowered map[types.NamespacedName]lowering
	// createdImplicit: when this controller created each Buckety's
	// implicit access, until the cache shows it (accesses.go).
	createdImplicit sync.Map
	prunedImplicit  time.Time
	// limitGates serialise, per backend and namespace, the passes that
	// may take a new claim under limits.perNamespace (claim.go).
	limitGates sync.Map
	// unrecorded: when this process first found each backend resource it
	// was about to adopt without an owner record (settleUnrecorded), and
	// when its stale entries were last pruned (UnixNano).
	unrecorded       sync.Map
	unrecordedPruned atomic.Int64
}

// gateBackoff paces the retries of passes that found their namespace's
// gate held, in case the wake when it is freed (wakeOne) is lost: 0.5 s
// doubling to 5 s, reset when a pass holds the gate. Short, since the
// holder is one pass and a burst of a namespace's new Bucketies goes
// through the gate one by one.
var gateBackoff = retry.Backoff{TransientBase: 500 * time.Millisecond, TransientMax: 5 * time.Second}

// Namespaces are read (from the cache) for the labels that
// limits.namespaces entries select by.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile implements reconcile.Reconciler: it fetches the Buckety, defers
// the one status write (status.Finish, from the conditions status.go
// derives), handles deletion (delete.go) or adds the finalizer, and then
// runs the phases in order, each recording facts and stopping the pass
// when the next could not proceed: resolve the backend, resolve and check
// the name, validate the parameters, claim the resource (claim.go),
// provision it (provision.go, with the adoption check of adoption.go), and
// reconcile its accesses (accesses.go).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, reterr error) {
	b := &v1.Buckety{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone, maybe without the pass that deletes it (its finalizer
			// removed by hand): nothing of it is kept.
			r.Written.Forget(req.NamespacedName)
			r.Held.Forget(req.NamespacedName)
			r.Waiters.Done(req.NamespacedName)
			r.forgetLowering(req.NamespacedName)
			r.mu.Lock()
			delete(r.deleted, req.NamespacedName)
			r.mu.Unlock()
		}
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if stale, after := r.Written.Stale(b); stale {
		// The cache lags this controller's own last write; that write's
		// watch event brings the object back, or it came just now and
		// the object runs again after a moment (status.Written).
		return reconcile.Result{RequeueAfter: after}, nil
	}
	orig := b.DeepCopy()
	f := &facts{recorded: provisionedRecorded(orig), now: r.now()}
	f.heldSince, f.held = r.Held.Overlay(b)
	defer func() {
		if f.releaseLimit != nil {
			f.releaseLimit()
		}
	}()
	defer func() {
		defer r.Written.Record(b, orig.ResourceVersion)
		if f.gateBusy && reterr == nil {
			// Nothing was found out: the status stays as it is.
			res = reconcile.Result{RequeueAfter: gateBackoff.Next(b.UID, retry.Transient)}
			return
		}
		if f.backendDown && reterr == nil {
			// Held back: the status says the backend is unavailable,
			// and it still is. Retried as a failed pass would be.
			res = reconcile.Result{RequeueAfter: retry.HeldBackRetry(r.Backoff, b.UID)}
			return
		}
		derived := conditions(b, f)
		r.announce(b, derived)
		hold := r.holding(b, f, reterr)
		holdReady := !hold && r.holdingReady(b, orig, f, reterr)
		before := b.ResourceVersion
		res, reterr = status.Finish(ctx, r.Client, r.Backoff, statusFields, b, orig, status.Outcome{
			Derived: derived, Failure: failure(f), Deleting: f.deleting, Hold: hold || holdReady, Written: r.Written,
		}, res, reterr)
		if b.ResourceVersion != before {
			// The status write succeeded (a failed one leaves the
			// object as it was), and with it the drain change.
			r.flushDrainEvents(b, f)
		}
		switch {
		case hold:
			res = r.hold(ctx, b, f, res)
		case holdReady:
			res = r.holdReady(f, res)
		default:
			r.Held.endPending(req.NamespacedName)
		}
		r.Held.Supersede(req.NamespacedName, hold, derived)
	}()

	if !b.DeletionTimestamp.IsZero() {
		r.Held.Forget(req.NamespacedName)
		return r.reconcileDelete(ctx, b, f)
	}
	if err := r.Written.AddFinalizer(ctx, r.Client, b, shard.BucketyValue(b)); err != nil {
		return reconcile.Result{}, err
	}
	requeue := reconcile.Result{RequeueAfter: retry.Jitter(r.Recheck)}
	if tr := drainRequest(b, f.now); len(tr.events) > 0 {
		f.drainTouched = true
		f.drainEvents = tr.events
	}

	e, problem := r.resolve(b)
	terms := termsOf(b, r.configured(b, e))
	f.drainTerms = &terms
	if problem != nil {
		f.problem = problem
		return requeue, nil
	}
	requeue.RequeueAfter = retry.Jitter(r.recheck(e))
	e, err := backends.ForNamespace(ctx, r.Client, e, b.Namespace)
	if err != nil {
		f.claimErr = err
		return requeue, nil
	}
	mergeDefaults(e, b, f)
	fp := budget.Footprint(e.Config, f.params)
	f.quota = &fp
	if !r.resolveName(ctx, b, e, f) || !r.validateParameters(b, e, f) {
		return requeue, nil
	}
	// A backend that stopped answering holds back the passes that
	// already found it so (breaker.go): no worker waits on it for them.
	probe, admitted := r.Breaker.Admit(e.Name, retry.FoundUnreachable(b.Status.Conditions, b.Generation))
	if !admitted {
		f.backendDown = true
		return requeue, nil
	}
	defer func() { r.Breaker.Release(ctx, "Bucketies", e.Name, probe, f.Outcome(f.askedBackend)) }()
	if !r.claim(ctx, b, e, f) {
		return requeue, nil
	}
	ok, err := r.provision(ctx, b, e, f)
	if w := f.settleIn; w > 0 && w < requeue.RequeueAfter {
		requeue.RequeueAfter = w
	}
	if w := f.usageIn; w > 0 && w < requeue.RequeueAfter {
		requeue.RequeueAfter = w
	}
	before := drainPhase(b)
	w := r.drainPass(ctx, b, e, f)
	if drainPhase(b) != before {
		// Drained, Refused or taken from the server: the status write is
		// not held back (a crash before it would leave the server's
		// Draining for the next owner to run another step on).
		f.drainTouched = true
	}
	if w > 0 && w < requeue.RequeueAfter {
		requeue.RequeueAfter = w
	}
	if err != nil || !ok {
		return requeue, err
	}
	if err := r.reconcileAccesses(ctx, b, f); err != nil {
		return requeue, err
	}
	return requeue, nil
}

// mergeDefaults records the backend defaults in effect for b (kept as
// recorded, or the backend's current ones: config.Backend.DefaultsFor)
// and spec.parameters merged over them: what the driver gets, budgets
// count, and status.effectiveParameters shows.
func mergeDefaults(e *backends.Entry, b *v1.Buckety, f *facts) {
	f.defaults = budget.Defaults(e.Config, b)
	f.params = config.Effective(b.Spec.Parameters, f.defaults)
}

// failure classifies this reconcile for the retry backoff: soon after a
// failure that may clear by itself, slower after one that needs someone to
// act outside the object, and at the drift re-check interval otherwise.
func failure(f *facts) retry.Failure {
	switch {
	case f.Unavailable != nil, f.Other != nil && !f.createRefused && !f.refused, f.claimErr != nil:
		return retry.Transient
	case f.createRefused, f.refused, f.AccessDenied != nil, f.adoptionRefused != "", f.ownedElsewhere != "", f.handedOver != "", len(f.adoptionDrift) > 0, f.conflict != nil, f.limitExceeded != "", f.budgetExceeded != "", f.locationChanged != "", len(f.shortfalls) > 0:
		return retry.Permanent
	}
	return retry.None
}

// configured is the config of b's backend: e's when it resolved, else
// the backend b names (status.backend, else spec.backend) where the
// config has it (Resolve refused it: another driver or driver major);
// nil when the config does not know it. The drain's terms come from it
// even in a pass that cannot reach the backend.
func (r *Reconciler) configured(b *v1.Buckety, e *backends.Entry) *config.Backend {
	if e != nil {
		return e.Config
	}
	name := b.Spec.Backend
	if b.Status.Backend != "" {
		name = b.Status.Backend
	}
	if e, ok := r.Backends.Get(name); ok {
		return e.Config
	}
	return nil
}

func (r *Reconciler) resolve(b *v1.Buckety) (*backends.Entry, *backends.Problem) {
	return backends.Resolve(r.Backends, b.Spec.Backend,
		backends.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
}

// resolveName finds the backend resource name: the name of a claim this
// Buckety already wrote to the backend under (even if the status write that
// followed was lost), else status.backendResourceName once stamped, else
// spec.name resolved now. A name that does not come from this Buckety's own
// claim is checked against the backend's name policy and the driver's rules
// before anything is claimed, so a tenant-written status field cannot point
// the controller at a resource the tenant could not have named.
func (r *Reconciler) resolveName(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	owned, err := r.Claims.OwnedCached(ctx, b.UID)
	if err != nil {
		f.claimErr = err
		return false
	}
	for i := range owned {
		if cl := &owned[i]; cl.Spec.Phase != v1.ClaimClaimed && cl.Spec.Backend == e.Name {
			f.resourceName = cl.Spec.ResourceName
			return true
		}
	}
	src := naming.Source{
		Name: b.Name, Namespace: b.Namespace, Labels: b.Labels,
		BackendName: e.Name, Defaults: e.Config.Defaults,
	}
	name := b.Status.BackendResourceName
	if name == "" {
		if name, err = naming.Resolve(b.Spec.Name, src); err != nil {
			f.templateErr = err
			return false
		}
	}
	f.resourceName = name
	if err := e.Config.CheckName(src, name); err != nil {
		f.invalidName = "spec.name " + err.Error()
		return false
	}
	if _, errs := e.Driver.ValidateName(field.NewPath("spec", "name").Key("resolved"), e.Config.Options(), name); len(errs) > 0 {
		f.invalidName = fmt.Sprintf("spec.name resolves to %q, which driver %s rejects: %v", name, e.Driver.Name(), errs.ToAggregate())
		return false
	}
	return true
}

// validateParameters checks spec.parameters as admission does, in case a
// Buckety got past the webhook (installed later, or its config older):
// the API's bounds, the driver's rules and the backend's limits.
func (r *Reconciler) validateParameters(b *v1.Buckety, e *backends.Entry, f *facts) bool {
	p := field.NewPath("spec", "parameters")
	errs := v1.ValidateParameterBounds(p, b.Spec.Parameters)
	if len(errs) == 0 {
		// The driver judges what it will get: the spec over the defaults.
		// For a Buckety already provisioned, what it gets is also what it
		// had: a value the backend's config no longer allows (its
		// operator withdrew allowAnonymousRead, or changed the
		// implementation) is, as at admission, kept because unchanged,
		// and its Ensure says it is not applied (a shortfall) and undoes
		// what it can, as the driver documents. Refused here, no Ensure
		// would run: a bucket whose anonymous read was withdrawn would
		// stay public. A Buckety not yet provisioned is refused it.
		effective := config.Effective(b.Spec.Parameters, f.defaults)
		var had map[string]string
		if b.Status.Provenance != "" {
			had = effective
		}
		_, errs = e.Driver.ValidateParameters(p, e.Config.Options(), had, effective)
		errs = append(errs, e.Config.CheckParameterLimits(p, b.Spec.Parameters)...)
	}
	if len(errs) > 0 {
		f.invalidParams = errs.ToAggregate().Error()
		return false
	}
	return true
}

// announce records a Warning event when the pass turns QuotaWarning True
// or changes its reason, or first finds the namespace's budget exceeded:
// once per episode, as the condition changes, not once per pass.
func (r *Reconciler) announce(b *v1.Buckety, derived []status.Cond) {
	for _, c := range derived {
		prev := meta.FindStatusCondition(b.Status.Conditions, c.Type)
		if prev != nil && prev.Status == c.Status && prev.Reason == c.Reason {
			continue
		}
		switch {
		case c.Type == v1.ConditionQuotaWarning && c.Status == metav1.ConditionTrue:
			r.event(b, corev1.EventTypeWarning, c.Reason, v1.EventActionReconcile, c.Message)
		case c.Type == v1.ConditionReady && c.Reason == v1.ReasonBudgetExceeded:
			r.event(b, corev1.EventTypeWarning, v1.EventBudgetExceeded, v1.EventActionClaim, c.Message)
		case c.Type == v1.ConditionDraining && c.Reason == v1.ReasonDrainStuck:
			r.event(b, corev1.EventTypeWarning, v1.EventDrainStuck, v1.EventActionDrain, c.Message)
		}
	}
}

func (r *Reconciler) event(b *v1.Buckety, typ, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(b, nil, typ, reason, action, "%s", note)
	}
}
