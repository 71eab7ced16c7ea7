package buckety

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/naming"
	"github.com/Yolean/buckety-controller/internal/testhook"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies/status,verbs=patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies/finalizers,verbs=update
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// DeletePassInterval is how soon a deletion in progress is continued.
const DeletePassInterval = time.Second

// Reconciler reconciles Buckety objects.
type Reconciler struct {
	Client   ctrl.Client
	Backends *backends.Set
	// Claims is the controller's record of which Buckety owns which backend
	// resource; destructive actions trust only it.
	Claims   *shared.Claims
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
	Backoff *shared.Backoff
	// Written skips reconciles that start from a cache older than this
	// controller's own last write to the object; nil skips none.
	Written *shared.Written
	// Released, when set, receives the Bucketies waiting for a name (Ready
	// reason NameConflict) whenever a claim is released, so they retry at
	// once instead of on their backoff.
	Released chan<- event.GenericEvent

	mu      sync.Mutex
	deleted map[types.UID]int64
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, reterr error) {
	b := &v1.Buckety{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.Written.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if r.Written.Stale(b) {
		// The cache lags this controller's own last write; that write's
		// watch event brings the object back (shared.Written).
		return reconcile.Result{}, nil
	}
	orig := b.DeepCopy()
	f := &facts{}
	defer func() {
		defer r.Written.Record(b, orig.ResourceVersion)
		res, reterr = shared.Finish(ctx, r.Client, r.Backoff, b, orig, &orig.Status, &b.Status, shared.Outcome{
			Conditions: &b.Status.Conditions, ObservedGeneration: &b.Status.ObservedGeneration,
			Derived: conditions(b, f), Failure: failure(f), Deleting: f.deleting,
		}, res, reterr)
	}()

	if !b.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, b, f)
	}
	if err := shared.AddFinalizer(ctx, r.Client, b); err != nil {
		return reconcile.Result{}, err
	}
	requeue := reconcile.Result{RequeueAfter: shared.Jitter(r.Recheck)}

	e, problem := r.resolve(b)
	if problem != nil {
		f.problem = problem
		return requeue, nil
	}
	requeue.RequeueAfter = shared.Jitter(r.recheck(e))
	if !r.resolveName(ctx, b, e, f) || !r.validateParameters(b, e, f) || !r.claim(ctx, b, e, f) {
		return requeue, nil
	}
	ok, err := r.provision(ctx, b, e, f)
	if err != nil || !ok {
		return requeue, err
	}
	if err := r.reconcileAccesses(ctx, b, f); err != nil {
		return requeue, err
	}
	return requeue, nil
}

// failure classifies this reconcile for the retry backoff: soon after a
// failure that may clear by itself, slower after one that needs someone to
// act outside the object, and at the drift re-check interval otherwise.
func failure(f *facts) shared.Failure {
	switch {
	case f.Unavailable != nil, f.Other != nil, f.claimErr != nil:
		return shared.Transient
	case f.AccessDenied != nil, f.adoptionRefused != "", len(f.adoptionDrift) > 0, f.conflictOwner != "", len(f.shortfalls) > 0:
		return shared.Permanent
	}
	return shared.None
}

func (r *Reconciler) resolve(b *v1.Buckety) (*backends.Entry, *shared.Problem) {
	return shared.Resolve(r.Backends, b.Spec.Backend,
		shared.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
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

func (r *Reconciler) validateParameters(b *v1.Buckety, e *backends.Entry, f *facts) bool {
	if _, errs := e.Driver.ValidateParameters(field.NewPath("spec", "parameters"), e.Config.Options(), nil, b.Spec.Parameters); len(errs) > 0 {
		f.invalidParams = errs.ToAggregate().Error()
		return false
	}
	return true
}

// claim makes sure no other Buckety owns the backend resource, and finds
// this Buckety's claim on it. Claims on other names that were never
// written to the backend (the template resolved differently before) are
// released first. A resource nobody holds a claim on is claimed by
// provision, after its adoption check, in the phase the check decides;
// f.claim stays nil until then.
func (r *Reconciler) claim(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	owned, err := r.Claims.OwnedCached(ctx, b.UID)
	if err != nil {
		f.claimErr = err
		return false
	}
	for i := range owned {
		cl := &owned[i]
		if cl.Spec.Phase == v1.ClaimClaimed && (cl.Spec.Backend != e.Name || cl.Spec.ResourceName != f.resourceName) {
			if err := r.Claims.Release(ctx, cl); err != nil {
				f.claimErr = fmt.Errorf("release claim on %s: %w", cl.Spec.ResourceName, err)
				return false
			}
		}
	}
	cl, other, err := r.Claims.Held(ctx, b, e.Name, f.resourceName, false)
	switch {
	case err != nil:
		f.claimErr = err
		return false
	case cl != nil:
		f.claim = cl
		return true
	case !other:
		return true
	}
	// Held by another Buckety, as far as the cache shows: Acquire reads it
	// fresh, and takes over a claim whose owner is gone.
	return r.acquire(ctx, b, e, f)
}

// acquire takes the claim through Claims.Acquire (phase Claimed, the
// adoption check still to run) or reports the conflict.
func (r *Reconciler) acquire(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	cl, conflict, err := r.Claims.Acquire(ctx, b, e.Name, f.resourceName)
	switch {
	case err != nil:
		f.claimErr = err
		return false
	case conflict != nil:
		f.conflictOwner = conflict.Owner
		r.conflictEvent(b, e, f)
		return false
	}
	f.claim = cl
	return true
}

// conflictEvent reports a lost claim once per episode.
func (r *Reconciler) conflictEvent(b *v1.Buckety, e *backends.Entry, f *facts) {
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c != nil && c.Reason == v1.ReasonNameConflict {
		return
	}
	r.event(b, corev1.EventTypeWarning, v1.ReasonNameConflict, "Claim", fmt.Sprintf("%s on backend %s is owned by Buckety %s", f.resourceName, e.Name, f.conflictOwner))
}

// provision converges the backend resource through the driver, and on the
// way records in the claim, before each backend write it depends on, how
// this Buckety came to own the resource:
//
//   - No claim yet, or Claimed (a claim taken over from a deleted owner, or
//     left by an older controller): the adoption check runs, and its
//     verdict is recorded (inspectAndRecord). When the tenant asks to adopt
//     (spec.adoption) and the backend allows it, an existing resource,
//     with content or not, is recorded Adopting. Otherwise a resource
//     holding content is refused and the claim released, and an empty one
//     is recorded Adopted. A missing one is recorded Creating (the intent)
//     before Ensure may create it.
//   - Adopting: see settleAdoption; nothing is written to the resource
//     until the adoption settles as Adopted.
//   - Creating, in the pass that recorded it: Ensure reporting that it
//     created the resource makes it Created; a resource that appeared
//     between the check and Ensure makes it Adopted.
//   - Creating, found by a later pass (a crash or a lost write came
//     between): the resource is buckety's, Created.
//
// The sticky status fields are then copied from the claim.
func (r *Reconciler) provision(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) (bool, error) {
	cl := f.claim
	justRecorded := false
	if cl == nil || cl.Spec.Phase == v1.ClaimClaimed {
		var ok bool
		if cl, justRecorded, ok = r.inspectAndRecord(ctx, b, e, f, cl); !ok {
			return false, nil
		}
		f.claim = cl
	}
	if cl.Spec.Phase == v1.ClaimAdopting && !r.settleAdoption(ctx, b, e, f) {
		return false, nil
	}
	res, err := e.Backend.Ensure(ctx, drivers.Resource{Name: f.resourceName, Parameters: b.Spec.Parameters, MaxAge: r.maxAge(e)})
	var drift *drivers.DriftError
	switch {
	case errors.As(err, &drift):
		f.drift = drift
		metrics.DriftDetected.WithLabelValues(e.Name, "false").Inc()
		r.event(b, corev1.EventTypeWarning, v1.ReasonDriftUnrepairable, "Reconcile", drift.Error())
	case err != nil:
		f.Record(err)
		return false, nil
	}
	if res.Created {
		testhook.Pause(ctx, testhook.AfterCreate)
	}
	first := b.Status.Provenance == "" || b.Status.BackendResourceName != cl.Spec.ResourceName
	if cl.Spec.Phase == v1.ClaimCreating {
		phase := v1.ClaimCreated
		if justRecorded && !res.Created {
			phase = v1.ClaimAdopted
		}
		if err := r.Claims.Advance(ctx, cl, phase); err != nil {
			f.claimErr = err
			return false, nil
		}
	}
	// With drift the resource exists and is usable; the drift is reported.
	f.provisioned = true
	f.shortfalls = res.Shortfalls
	provenance := v1.ProvenanceCreated
	if cl.Spec.Phase == v1.ClaimAdopted {
		provenance = v1.ProvenanceAdopted
	}
	// The status mirrors the claim; a hand-edited status is put back.
	b.Status.Backend = e.Name
	b.Status.Driver = e.Driver.Name()
	if b.Status.DriverMajor == nil {
		major := e.Driver.Version().Major
		b.Status.DriverMajor = &major
	}
	b.Status.BackendResourceName = cl.Spec.ResourceName
	b.Status.Provenance = provenance
	if first {
		msg := fmt.Sprintf("%s %s on backend %s (driver %s %s)", strings.ToLower(string(provenance)), f.resourceName, e.Name, e.Driver.Name(), e.Driver.Version())
		if da := b.Spec.DefaultAccess; da != nil {
			// One event, not a second one when the access is created.
			msg += fmt.Sprintf("; implicit BucketyAccess %s writes Secret %s", b.Name, da.CredentialsSecretName)
		}
		r.event(b, corev1.EventTypeNormal, "Provisioned", "Provision", msg)
	} else if len(res.Changes) > 0 {
		reason := "Updated"
		if b.Generation == b.Status.ObservedGeneration {
			reason = "DriftRepaired"
			metrics.DriftDetected.WithLabelValues(e.Name, "true").Inc()
			metrics.DriftRepaired.WithLabelValues(e.Name).Inc()
		}
		r.event(b, corev1.EventTypeNormal, reason, "Reconcile", strings.Join(res.Changes, "; "))
	}
	b.Status.DriverBuildVersion = e.Driver.Version().String()
	return true, nil
}

// inspectAndRecord runs the adoption check on a resource this Buckety has
// recorded no verdict for (cl nil: no claim yet; or cl Claimed), and
// records the verdict in the claim before anything is written to the
// resource: a new claim is born in that phase (one write), a Claimed one
// is advanced. It returns the claim, whether this call recorded Creating,
// and false when provisioning stops here (refused, conflict, or an error,
// all in f).
func (r *Reconciler) inspectAndRecord(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, cl *v1.BucketyClaim) (*v1.BucketyClaim, bool, bool) {
	in, err := e.Backend.Inspect(ctx, drivers.Resource{Name: f.resourceName, Parameters: b.Spec.Parameters})
	if err != nil {
		f.Record(err)
		return nil, false, false
	}
	adopting := in.Exists && b.Spec.Adoption.Adopts() && e.Config.AllowsAdoption()
	if in.Exists && in.HasContent && !adopting {
		if cl == nil {
			// The cache may not show yet a claim an earlier pass of this
			// Buckety wrote (and the content may be what its workloads
			// wrote since): ask the API server before refusing.
			mine, other, err := r.Claims.Held(ctx, b, e.Name, f.resourceName, true)
			switch {
			case err != nil:
				f.claimErr = err
				return nil, false, false
			case mine != nil && mine.Spec.Phase != v1.ClaimClaimed:
				return mine, false, true
			case other:
				// Another Buckety's: a conflict, or a stale claim to take
				// over (then released below, as refused).
				if !r.acquire(ctx, b, e, f) {
					return nil, false, false
				}
				mine = f.claim
			}
			cl = mine
		}
		if cl != nil {
			// The claim is released only as read (see Claims.Release): a
			// stale Claimed claim, really Creating or Created, conflicts,
			// and the next pass sees what buckety wrote.
			if err := r.Claims.Release(ctx, cl); err != nil {
				f.claimErr = err
				return nil, false, false
			}
		}
		f.adoptionRefused = in.Detail
		f.adoptionHint = adoptionHint(b, e)
		r.event(b, corev1.EventTypeWarning, v1.ReasonAdoptionRefused, "Provision", in.Detail)
		return nil, false, false
	}
	phase := v1.ClaimCreating
	switch {
	case adopting:
		phase = v1.ClaimAdopting
	case in.Exists:
		phase = v1.ClaimAdopted
	}
	if cl == nil {
		got, created, conflict, err := r.Claims.AcquireAs(ctx, b, e.Name, f.resourceName, phase)
		switch {
		case err != nil:
			f.claimErr = err
			return nil, false, false
		case conflict != nil:
			f.conflictOwner = conflict.Owner
			r.conflictEvent(b, e, f)
			return nil, false, false
		case created:
			testhook.Pause(ctx, testhook.AfterInspect)
			return got, phase == v1.ClaimCreating, true
		case got.Spec.Phase != v1.ClaimClaimed:
			// Recorded by an earlier pass the cache had not shown: that
			// verdict stands.
			return got, false, true
		}
		cl = got
	}
	if err := r.Claims.Advance(ctx, cl, phase); err != nil {
		f.claimErr = err
		return nil, false, false
	}
	testhook.Pause(ctx, testhook.AfterInspect)
	return cl, phase == v1.ClaimCreating, true
}

// adoptionHint tells the tenant of a refused adoption what would let it in.
func adoptionHint(b *v1.Buckety, e *backends.Entry) string {
	switch {
	case b.Spec.Adoption.Adopts():
		return fmt.Sprintf("spec.adoption is %s, but backend %s does not allow adoption (adoption.allow in buckety-controller.yaml): empty it, or choose another spec.name", b.Spec.Adoption, e.Name)
	case e.Config.AllowsAdoption():
		return "buckety does not claim a resource that already holds content unless asked to: set spec.adoption: Adopt to take it over, empty it, or choose another spec.name"
	}
	return "buckety does not claim a resource that already holds content: empty it, or choose another spec.name"
}

// settleAdoption decides whether an adoption the tenant asked for (claim
// phase Adopting) is settled, and records it in the claim (Adopted) before
// anything is written to the resource. It compares the resource with
// spec.parameters through the driver's dry run. With differences and
// spec.adoption other than AdoptAndConverge, nothing is applied: the
// differences are reported (Ready=False, reason AdoptionDrift) and the
// claim stays Adopting until the parameters match or the tenant asks to
// converge. Differences being converged are announced in an event first.
func (r *Reconciler) settleAdoption(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	res, err := e.Backend.Ensure(ctx, drivers.Resource{Name: f.resourceName, Parameters: b.Spec.Parameters, DryRun: true})
	var drift *drivers.DriftError
	if err != nil && !errors.As(err, &drift) {
		f.Record(err)
		return false
	}
	diffs := res.Changes
	if drift != nil {
		diffs = append(diffs, drift.Error())
	}
	if len(diffs) > 0 && b.Spec.Adoption != v1.AdoptionAndConverge {
		f.adoptionDrift = diffs
		f.drift = drift
		if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c == nil || c.Reason != v1.ReasonAdoptionDrift || c.ObservedGeneration != b.Generation {
			r.event(b, corev1.EventTypeWarning, v1.ReasonAdoptionDrift, "Adopt", fmt.Sprintf("%s on backend %s differs from spec.parameters; nothing applied: %s", f.resourceName, e.Name, strings.Join(diffs, "; ")))
		}
		return false
	}
	if len(diffs) > 0 {
		r.event(b, corev1.EventTypeNormal, "AdoptionConverging", "Adopt", fmt.Sprintf("spec.adoption is AdoptAndConverge; applying to %s on backend %s: %s", f.resourceName, e.Name, strings.Join(diffs, "; ")))
	}
	if err := r.Claims.Advance(ctx, f.claim, v1.ClaimAdopted); err != nil {
		f.claimErr = err
		return false
	}
	return true
}

// reconcileAccesses materialises or removes the implicit access, then
// checks every access's Secret.
func (r *Reconciler) reconcileAccesses(ctx context.Context, b *v1.Buckety, f *facts) error {
	accesses, err := r.accesses(ctx, b)
	if err != nil {
		return err
	}
	if err := r.reconcileImplicit(ctx, b, accesses, f); err != nil {
		return err
	}
	f.accessesChecked = true
	for _, a := range accesses {
		if !a.DeletionTimestamp.IsZero() {
			continue
		}
		ready := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || a.Status.ObservedGeneration != a.Generation || a.Status.BucketyGeneration != b.Generation {
			f.accessesPending = append(f.accessesPending, a.Name)
		}
		if meta.IsStatusConditionTrue(a.Status.Conditions, v1.ConditionScopingNotImplemented) {
			f.unscoped = append(f.unscoped, a.Name)
		}
	}
	if b.Spec.DefaultAccess != nil && len(accesses) == 0 && f.implicitErr == "" {
		// Named as it will be once created, so the Ready message (and with
		// it the status) does not change when the access appears.
		f.accessesPending = append(f.accessesPending, b.Name)
	}
	return nil
}

func (r *Reconciler) accesses(ctx context.Context, b *v1.Buckety) ([]v1.BucketyAccess, error) {
	var list v1.BucketyAccessList
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(b.Namespace), ctrl.MatchingFields{shared.IndexBucketyRef: b.Name}); err != nil {
		return nil, fmt.Errorf("list accesses: %w", err)
	}
	return list.Items, nil
}

// IsImplicit reports whether a is b's implicit access.
func IsImplicit(a *v1.BucketyAccess, b *v1.Buckety) bool {
	return a.Labels[v1.ImplicitLabel] == "true" && metav1.IsControlledBy(a, b)
}

func (r *Reconciler) reconcileImplicit(ctx context.Context, b *v1.Buckety, accesses []v1.BucketyAccess, f *facts) error {
	var implicit *v1.BucketyAccess
	explicit := 0
	for i := range accesses {
		if IsImplicit(&accesses[i], b) {
			implicit = &accesses[i]
		} else {
			explicit++
		}
	}
	want := b.Spec.DefaultAccess != nil && explicit == 0
	if !want {
		if implicit != nil && implicit.DeletionTimestamp.IsZero() {
			why := "spec.defaultAccess was removed"
			if explicit > 0 {
				why = "an explicit BucketyAccess targets this Buckety"
			}
			if err := r.Client.Delete(ctx, implicit); ctrl.IgnoreNotFound(err) != nil {
				return err
			}
			r.event(b, corev1.EventTypeNormal, "ImplicitAccessRemoved", "Reconcile", fmt.Sprintf("deleted implicit BucketyAccess %s: %s", implicit.Name, why))
		}
		return nil
	}
	da := b.Spec.DefaultAccess
	role := da.Role
	if role == "" {
		role = v1.RoleReadWrite
	}
	if implicit != nil {
		switch {
		case !implicit.DeletionTimestamp.IsZero():
		case implicit.Spec.CredentialsSecretName != da.CredentialsSecretName:
			// The Secret name of an access is immutable: replace it.
			if err := r.Client.Delete(ctx, implicit); ctrl.IgnoreNotFound(err) != nil {
				return err
			}
		case implicit.Spec.Role != role:
			before := implicit.DeepCopy()
			implicit.Spec.Role = role
			if err := r.Client.Patch(ctx, implicit, ctrl.MergeFrom(before)); err != nil {
				return err
			}
		}
		return nil
	}
	if !provisionedRecorded(b) {
		// The access waits for its Buckety's recorded Provisioned status;
		// created before that is written (by this pass), its first
		// reconcile would only write a waiting status that is overwritten
		// a moment later. The status patch of this pass triggers the next,
		// which creates it.
		return nil
	}
	a := &v1.BucketyAccess{
		// Born with the finalizer: one write instead of a create and a patch.
		ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace, Labels: map[string]string{v1.ImplicitLabel: "true"}, Finalizers: []string{v1.Finalizer}},
		Spec:       v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: b.Name}, CredentialsSecretName: da.CredentialsSecretName, Role: role},
	}
	if err := controllerutil.SetControllerReference(b, a, r.Client.Scheme()); err != nil {
		return err
	}
	err := r.Client.Create(ctx, a)
	if apierrors.IsAlreadyExists(err) {
		// Ours, created by an earlier pass the cache has not seen yet?
		cur := &v1.BucketyAccess{}
		if gerr := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(a), cur); gerr == nil && IsImplicit(cur, b) {
			return nil
		}
		f.implicitErr = fmt.Sprintf("spec.defaultAccess: a BucketyAccess named %s already exists in %s and is not this Buckety's implicit access", b.Name, b.Namespace)
		return nil
	}
	if err != nil {
		return err
	}
	if b.Status.ObservedGeneration != 0 {
		// The first provisioning's Provisioned event announced it; a later
		// creation (defaultAccess added, the access deleted or replaced)
		// is reported on its own.
		r.event(b, corev1.EventTypeNormal, "ImplicitAccessCreated", "Reconcile", fmt.Sprintf("created implicit BucketyAccess %s writing Secret %s", a.Name, da.CredentialsSecretName))
	}
	return nil
}

// provisionedRecorded reports whether b's status, as read at the start of
// this reconcile, already records the backend resource as provisioned for
// its current generation: what an access waits for (access.Reconciler).
func provisionedRecorded(b *v1.Buckety) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionProvisioned)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == b.Generation && b.Status.BackendResourceName != ""
}

// reconcileDelete waits for accesses, then retains or deletes the backend
// resource, then releases the claim and the finalizer. What to delete comes
// from this Buckety's claims, read fresh from the API server, never from
// its status, which a tenant may be allowed to write: only a resource whose
// claim records that buckety created it, for this Buckety's UID, under a
// name the backend's current name policy allows for this namespace, is
// deleted.
func (r *Reconciler) reconcileDelete(ctx context.Context, b *v1.Buckety, f *facts) (reconcile.Result, error) {
	f.deleting = true
	if !controllerutil.ContainsFinalizer(b, v1.Finalizer) {
		return reconcile.Result{}, nil
	}
	accesses, err := r.accesses(ctx, b)
	if err != nil {
		return reconcile.Result{}, err
	}
	for i := range accesses {
		a := &accesses[i]
		if IsImplicit(a, b) {
			f.waitingImplicit = true
			if a.DeletionTimestamp.IsZero() {
				if err := r.Client.Delete(ctx, a); ctrl.IgnoreNotFound(err) != nil {
					return reconcile.Result{}, err
				}
			}
			continue
		}
		f.blockedBy = append(f.blockedBy, a.Name)
	}
	if len(f.blockedBy) > 0 || f.waitingImplicit {
		// Access deletions trigger this reconcile through the watch.
		return reconcile.Result{}, nil
	}
	owned, err := r.Claims.Owned(ctx, b.UID)
	if err != nil {
		return reconcile.Result{}, err
	}
	for i := range owned {
		cl := &owned[i]
		if res, done, err := r.deleteOrRetain(ctx, b, cl, f); !done {
			return res, err
		}
		if err := r.Claims.Release(ctx, cl); err != nil {
			return reconcile.Result{}, fmt.Errorf("release claim on %s: %w", cl.Spec.ResourceName, err)
		}
	}
	if len(owned) > 0 {
		r.wakeConflicts(ctx)
	}
	if len(owned) == 0 && b.Status.BackendResourceName != "" {
		r.event(b, corev1.EventTypeNormal, "Retained", "Delete", fmt.Sprintf("left %s on backend %s in place: buckety holds no claim of this Buckety on it", b.Status.BackendResourceName, b.Status.Backend))
	}
	r.mu.Lock()
	delete(r.deleted, b.UID)
	r.mu.Unlock()
	if r.Backoff != nil {
		r.Backoff.Reset(b.UID)
	}
	return reconcile.Result{}, shared.RemoveFinalizer(ctx, r.Client, b)
}

// deleteOrRetain handles one claimed resource of a Buckety being deleted.
// done is false while the deletion is in progress or failed.
func (r *Reconciler) deleteOrRetain(ctx context.Context, b *v1.Buckety, cl *v1.BucketyClaim, f *facts) (res reconcile.Result, done bool, err error) {
	name := cl.Spec.ResourceName
	retain := func(why string) (reconcile.Result, bool, error) {
		if cl.Spec.Phase != v1.ClaimClaimed {
			r.event(b, corev1.EventTypeNormal, "Retained", "Delete", fmt.Sprintf("left %s on backend %s in place: %s", name, cl.Spec.Backend, why))
		}
		return reconcile.Result{}, true, nil
	}
	switch {
	case b.Spec.RetentionPolicy != v1.RetentionDelete:
		return retain("retentionPolicy Retain")
	case !shared.Deletable(cl, r.deletesAdopted(cl.Spec.Backend)):
		switch cl.Spec.Phase {
		case v1.ClaimAdopting:
			return retain("it was adopted, not created, by buckety, and the adoption never settled")
		case v1.ClaimAdopted:
			return retain("it was adopted, not created, by buckety (the backend does not set adoption.deleteAdopted)")
		}
		return retain("this Buckety never wrote to it")
	}
	e, problem := shared.Resolve(r.Backends, cl.Spec.Backend,
		shared.Sticky{Backend: cl.Spec.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
	if problem != nil {
		f.problem = problem
		return reconcile.Result{RequeueAfter: shared.Jitter(r.Recheck)}, false, nil
	}
	src := naming.Source{Name: b.Name, Namespace: b.Namespace, Labels: b.Labels, BackendName: e.Name, Defaults: e.Config.Defaults}
	if err := e.Config.CheckName(src, name); err != nil {
		return retain("the backend's name policy does not give this name to namespace " + b.Namespace + " (" + err.Error() + ")")
	}
	err = e.Backend.Delete(ctx, drivers.Resource{Name: name, Parameters: b.Spec.Parameters})
	var ip *drivers.InProgressError
	switch {
	case errors.As(err, &ip):
		total := r.addDeleted(b.UID, ip.Done)
		f.deleteProgress = fmt.Sprintf("deleting %s on backend %s: %d removed so far; %s", name, e.Name, total, ip.Message)
		r.event(b, corev1.EventTypeNormal, "DeletionProgress", "Delete", f.deleteProgress)
		return reconcile.Result{RequeueAfter: DeletePassInterval}, false, nil
	case err != nil:
		f.Record(err)
		d := shared.TransientBase
		if r.Backoff != nil {
			d = r.Backoff.Next(b.UID, shared.Transient)
		}
		return reconcile.Result{RequeueAfter: d}, false, nil
	}
	why := "retentionPolicy Delete"
	if cl.Spec.Phase == v1.ClaimAdopted {
		why += "; adopted, and the backend sets adoption.deleteAdopted"
	}
	r.event(b, corev1.EventTypeNormal, "Deleted", "Delete", fmt.Sprintf("deleted %s on backend %s (%s)", name, e.Name, why))
	return reconcile.Result{}, true, nil
}

// deletesAdopted reports whether the maintainer lets retentionPolicy Delete
// delete adopted resources on the backend (adoption.deleteAdopted). A
// backend no longer configured does not.
func (r *Reconciler) deletesAdopted(backend string) bool {
	e, ok := r.Backends.Get(backend)
	return ok && e.Config.DeletesAdopted()
}

// wakeConflicts enqueues every Buckety waiting for a name another held.
func (r *Reconciler) wakeConflicts(ctx context.Context) {
	if r.Released == nil {
		return
	}
	var list v1.BucketyList
	if err := r.Client.List(ctx, &list, ctrl.MatchingFields{shared.IndexNameConflict: "true"}); err != nil {
		return // they retry on their backoff
	}
	for i := range list.Items {
		select {
		case r.Released <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
}

func (r *Reconciler) addDeleted(uid types.UID, n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deleted == nil {
		r.deleted = map[types.UID]int64{}
	}
	r.deleted[uid] += n
	return r.deleted[uid]
}

func (r *Reconciler) event(b *v1.Buckety, typ, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(b, nil, typ, reason, action, "%s", note)
	}
}
