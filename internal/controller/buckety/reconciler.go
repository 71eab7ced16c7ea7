package buckety

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/naming"
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
	Client ctrl.Client
	// APIReader reads around the cache: before the first reconcile stamps
	// the sticky fields, the object is read fresh, so a reconcile that runs
	// on a cache that has not seen the stamp yet cannot stamp again.
	APIReader ctrl.Reader
	Backends  *backends.Set
	Claims    *shared.Claims
	Recorder  events.EventRecorder
	// Recheck is the period of the drift re-check (jittered).
	Recheck time.Duration

	mu      sync.Mutex
	deleted map[types.UID]int64
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, reterr error) {
	b := &v1.Buckety{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if b.Status.Provenance == "" && b.DeletionTimestamp.IsZero() {
		if err := r.APIReader.Get(ctx, req.NamespacedName, b); err != nil {
			return reconcile.Result{}, ctrl.IgnoreNotFound(err)
		}
	}
	orig := b.DeepCopy()
	f := &facts{}
	defer func() {
		shared.Apply(&b.Status.Conditions, b.Generation, conditions(b, f))
		if ready := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); ready != nil && ready.Status == metav1.ConditionTrue {
			b.Status.ObservedGeneration = b.Generation
		}
		if equality.Semantic.DeepEqual(orig.Status, b.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, b, ctrl.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("patch status: %w", err))
		}
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
	if !r.resolveName(b, e, f) || !r.validateParameters(b, e, f) || !r.claim(ctx, b, e, f) {
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

func (r *Reconciler) resolve(b *v1.Buckety) (*backends.Entry, *shared.Problem) {
	return shared.Resolve(r.Backends, b.Spec.Backend,
		shared.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor},
		v1.ConditionBackendUnavailable, v1.ConditionDriverVersionIncompatible,
		v1.ReasonBackendNotConfigured, v1.ReasonDriverChanged, v1.ReasonDriverMajorMismatch)
}

// resolveName resolves spec.name once; afterwards status.backendResourceName
// is the name.
func (r *Reconciler) resolveName(b *v1.Buckety, e *backends.Entry, f *facts) bool {
	if b.Status.BackendResourceName != "" {
		f.resourceName = b.Status.BackendResourceName
		return true
	}
	src := naming.Source{
		Name: b.Name, Namespace: b.Namespace, Labels: b.Labels,
		BackendName: e.Name, Defaults: e.Config.Defaults,
	}
	name, err := naming.Resolve(b.Spec.Name, src)
	if err != nil {
		f.templateErr = err
		return false
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

// claim makes sure no other Buckety owns the backend resource.
func (r *Reconciler) claim(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	key := shared.ClaimKey(e.Name, f.resourceName)
	var others v1.BucketyList
	if err := r.Client.List(ctx, &others, ctrl.MatchingFields{shared.IndexClaim: key}); err != nil {
		f.backendErr = fmt.Errorf("list claims: %w", err)
		return false
	}
	for _, o := range others.Items {
		if o.UID != b.UID {
			f.conflictOwner = o.Namespace + "/" + o.Name
			r.conflictEvent(b, e, f)
			return false
		}
	}
	if owner, ok := r.Claims.Claim(key, b.UID); !ok {
		f.conflictOwner = string(owner) + " (claimed moments ago)"
		var all v1.BucketyList
		if err := r.Client.List(ctx, &all); err == nil {
			for _, o := range all.Items {
				if o.UID == owner {
					f.conflictOwner = o.Namespace + "/" + o.Name
				}
			}
		}
		r.conflictEvent(b, e, f)
		return false
	}
	return true
}

// conflictEvent reports a lost claim once per episode.
func (r *Reconciler) conflictEvent(b *v1.Buckety, e *backends.Entry, f *facts) {
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c != nil && c.Reason == v1.ReasonNameConflict {
		return
	}
	r.event(b, corev1.EventTypeWarning, v1.ReasonNameConflict, "Claim", fmt.Sprintf("%s on backend %s is owned by Buckety %s", f.resourceName, e.Name, f.conflictOwner))
}

// provision runs the adoption check on first reconcile, then Ensure, and
// stamps the sticky status. It reports whether the backend resource is
// usable.
func (r *Reconciler) provision(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) (bool, error) {
	first := b.Status.Provenance == ""
	existed := false
	if first {
		in, err := e.Backend.Inspect(ctx, f.resourceName)
		if err != nil {
			r.recordFailure(f, err)
			return false, nil
		}
		if in.Exists && in.HasContent {
			f.adoptionRefused = in.Detail
			r.Claims.Release(shared.ClaimKey(e.Name, f.resourceName), b.UID)
			r.event(b, corev1.EventTypeWarning, v1.ReasonAdoptionRefused, "Provision", in.Detail)
			return false, nil
		}
		existed = in.Exists
	}
	res, err := e.Backend.Ensure(ctx, drivers.Resource{Name: f.resourceName, Parameters: b.Spec.Parameters})
	var drift *drivers.DriftError
	switch {
	case errors.As(err, &drift):
		f.drift = drift
		metrics.DriftDetected.WithLabelValues(e.Name, "false").Inc()
		r.event(b, corev1.EventTypeWarning, v1.ReasonDriftUnrepairable, "Reconcile", drift.Error())
	case err != nil:
		r.recordFailure(f, err)
		return false, nil
	}
	// With drift the resource exists and is usable; the drift is reported.
	f.provisioned = true
	f.shortfalls = res.Shortfalls
	if first {
		b.Status.Backend = e.Name
		b.Status.Driver = e.Driver.Name()
		major := e.Driver.Version().Major
		b.Status.DriverMajor = &major
		b.Status.BackendResourceName = f.resourceName
		b.Status.Provenance = v1.ProvenanceAdopted
		if res.Created || !existed {
			b.Status.Provenance = v1.ProvenanceCreated
		}
		r.event(b, corev1.EventTypeNormal, "Provisioned", "Provision", fmt.Sprintf("%s %s on backend %s (driver %s %s)", strings.ToLower(string(b.Status.Provenance)), f.resourceName, e.Name, e.Driver.Name(), e.Driver.Version()))
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

func (r *Reconciler) recordFailure(f *facts, err error) {
	switch backends.Kind(err) {
	case "unavailable":
		f.unavailable = err
	case "access_denied":
		f.accessDenied = err
	default:
		f.backendErr = err
	}
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
		f.accessesPending = append(f.accessesPending, b.Name+" (implicit, being created)")
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
	a := &v1.BucketyAccess{
		ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace, Labels: map[string]string{v1.ImplicitLabel: "true"}},
		Spec:       v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: b.Name}, CredentialsSecretName: da.CredentialsSecretName, Role: role},
	}
	if err := controllerutil.SetControllerReference(b, a, r.Client.Scheme()); err != nil {
		return err
	}
	err := r.Client.Create(ctx, a)
	if apierrors.IsAlreadyExists(err) {
		f.implicitErr = fmt.Sprintf("spec.defaultAccess: a BucketyAccess named %s already exists in %s and is not this Buckety's implicit access", b.Name, b.Namespace)
		return nil
	}
	if err != nil {
		return err
	}
	r.event(b, corev1.EventTypeNormal, "ImplicitAccessCreated", "Reconcile", fmt.Sprintf("created implicit BucketyAccess %s writing Secret %s", a.Name, da.CredentialsSecretName))
	return nil
}

// reconcileDelete waits for accesses, then retains or deletes the backend
// resource, then releases the finalizer.
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
	if b.Spec.RetentionPolicy == v1.RetentionDelete && b.Status.Provenance == v1.ProvenanceCreated {
		e, problem := r.resolve(b)
		if problem != nil {
			f.problem = problem
			return reconcile.Result{RequeueAfter: shared.Jitter(r.Recheck)}, nil
		}
		err := e.Backend.Delete(ctx, b.Status.BackendResourceName)
		var ip *drivers.InProgressError
		switch {
		case errors.As(err, &ip):
			total := r.addDeleted(b.UID, ip.Done)
			f.deleteProgress = fmt.Sprintf("deleting %s on backend %s: %d removed so far; %s", b.Status.BackendResourceName, b.Status.Backend, total, ip.Message)
			r.event(b, corev1.EventTypeNormal, "DeletionProgress", "Delete", f.deleteProgress)
			return reconcile.Result{RequeueAfter: DeletePassInterval}, nil
		case err != nil:
			r.recordFailure(f, err)
			return reconcile.Result{}, fmt.Errorf("delete %s: %w", b.Status.BackendResourceName, err)
		}
		r.event(b, corev1.EventTypeNormal, "Deleted", "Delete", fmt.Sprintf("deleted %s on backend %s (retentionPolicy Delete)", b.Status.BackendResourceName, b.Status.Backend))
	} else if b.Status.BackendResourceName != "" {
		why := "retentionPolicy Retain"
		switch {
		case b.Status.Provenance == v1.ProvenanceAdopted:
			why = "it was adopted, not created, by buckety"
		case b.Status.Provenance == "":
			why = "this Buckety never claimed it"
		}
		r.event(b, corev1.EventTypeNormal, "Retained", "Delete", fmt.Sprintf("left %s on backend %s in place: %s", b.Status.BackendResourceName, b.Status.Backend, why))
	}
	if b.Status.Provenance != "" {
		r.Claims.Release(shared.ClaimKey(b.Status.Backend, b.Status.BackendResourceName), b.UID)
	}
	r.mu.Lock()
	delete(r.deleted, b.UID)
	r.mu.Unlock()
	return reconcile.Result{}, shared.RemoveFinalizer(ctx, r.Client, b)
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
