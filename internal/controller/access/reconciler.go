package access

import (
	"bytes"
	"context"
	"fmt"
	"sort"
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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses/status,verbs=patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses/finalizers,verbs=update
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete

// ConflictRetry is how soon a Secret conflict is checked again: the common
// case (implicit to explicit migration with the same Secret name) resolves
// as soon as the implicit access's Secret is gone.
const ConflictRetry = 3 * time.Second

// Reconciler reconciles BucketyAccess objects.
type Reconciler struct {
	Client ctrl.Client
	// APIReader reads Secrets the cache does not hold (the cache holds only
	// buckety's own), to find a foreign Secret before writing.
	APIReader ctrl.Reader
	Backends  *backends.Set
	// Claims, when set, supplies the backend resource name from the
	// Buckety's claim rather than its status, which a tenant may write.
	Claims   *shared.Claims
	Recorder events.EventRecorder
	Recheck  time.Duration
	// Backoff spaces retries after backend failures, independent of Recheck.
	Backoff *shared.Backoff
	// Written skips reconciles that start from a cache older than this
	// controller's own last write to the object; nil skips none.
	Written *shared.Written
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, reterr error) {
	a := &v1.BucketyAccess{}
	if err := r.Client.Get(ctx, req.NamespacedName, a); err != nil {
		if apierrors.IsNotFound(err) {
			r.Written.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if r.Written.Stale(a) {
		// The cache lags this controller's own last write; that write's
		// watch event brings the object back (shared.Written).
		return reconcile.Result{}, nil
	}
	orig := a.DeepCopy()
	f := &facts{}
	defer func() {
		defer r.Written.Record(a, orig.ResourceVersion)
		res, reterr = shared.Finish(ctx, r.Client, r.Backoff, a, orig, &orig.Status, &a.Status, shared.Outcome{
			Conditions: &a.Status.Conditions, ObservedGeneration: &a.Status.ObservedGeneration,
			Derived: conditions(a, f), Failure: failure(f), Deleting: f.deleting,
		}, res, reterr)
	}()

	if !a.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, a, f)
	}
	if err := shared.AddFinalizer(ctx, r.Client, a); err != nil {
		return reconcile.Result{}, err
	}
	requeue := reconcile.Result{RequeueAfter: shared.Jitter(r.Recheck)}

	b, e, ok, err := r.buckety(ctx, a, f)
	if err != nil || !ok {
		return requeue, err
	}
	// Warnings are the webhook's to show; ScopingNotImplemented carries them here.
	if _, errs := e.Driver.ValidateAccess(field.NewPath("spec", "parameters"), e.Config.Options(), string(a.Spec.Role), a.Spec.Parameters); len(errs) > 0 {
		f.invalid = errs.ToAggregate().Error()
		return requeue, nil
	}
	resource, ok, err := r.resource(ctx, b, e, f)
	if err != nil || !ok {
		return requeue, err
	}
	g, err := e.Backend.Grant(ctx, drivers.Access{
		Resource: resource, Namespace: a.Namespace, Name: a.Name,
		Role: string(a.Spec.Role), Parameters: a.Spec.Parameters, ResourceParameters: b.Spec.Parameters,
	})
	if err != nil {
		f.Record(err)
		return requeue, nil
	}
	scoped := g.Scoped
	f.scoped = &scoped
	a.Status.Principal = g.Principal
	conflict, err := r.writeSecret(ctx, a, g.Data, f)
	if err != nil {
		return requeue, err
	}
	if conflict {
		return reconcile.Result{RequeueAfter: ConflictRetry}, nil
	}
	a.Status.BucketyGeneration = b.Generation
	return requeue, nil
}

// failure classifies this reconcile for the retry backoff; an access
// waiting for its Buckety is woken by the Buckety watch instead.
func failure(f *facts) shared.Failure {
	switch {
	case f.Unavailable != nil, f.Other != nil, f.claimPending:
		return shared.Transient
	case f.AccessDenied != nil:
		return shared.Permanent
	}
	return shared.None
}

// buckety finds the access's Buckety and its backend, and checks that its
// backend resource is provisioned for the Buckety's current generation.
func (r *Reconciler) buckety(ctx context.Context, a *v1.BucketyAccess, f *facts) (*v1.Buckety, *backends.Entry, bool, error) {
	b := &v1.Buckety{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.BucketyRef.Name}, b)
	if apierrors.IsNotFound(err) {
		f.bucketyMissing = true
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	if !b.DeletionTimestamp.IsZero() {
		f.bucketyWaiting = fmt.Sprintf("Buckety %s is being deleted", b.Name)
		return nil, nil, false, nil
	}
	e, problem := shared.Resolve(r.Backends, b.Spec.Backend,
		shared.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
	if problem != nil {
		f.problem = problem
		return nil, nil, false, nil
	}
	prov := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionProvisioned)
	if b.Status.BackendResourceName == "" || prov == nil || prov.Status != metav1.ConditionTrue || prov.ObservedGeneration != b.Generation {
		msg := fmt.Sprintf("waiting for Buckety %s to provision its backend resource", b.Name)
		if prov != nil && prov.Status != metav1.ConditionTrue {
			msg += " (" + prov.Reason + ": " + prov.Message + ")"
		}
		f.bucketyWaiting = msg
		return nil, nil, false, nil
	}
	return b, e, true, nil
}

// resource is the backend resource name of b: its claim's, which the
// controller wrote and tenants cannot, once the claim is settled.
func (r *Reconciler) resource(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) (string, bool, error) {
	if r.Claims == nil {
		return b.Status.BackendResourceName, true, nil
	}
	owned, err := r.Claims.OwnedCached(ctx, b.UID)
	if err != nil {
		return "", false, err
	}
	for _, cl := range owned {
		if cl.Spec.Backend == e.Name && cl.Spec.ResourceName == b.Status.BackendResourceName && (cl.Spec.Phase == v1.ClaimCreated || cl.Spec.Phase == v1.ClaimAdopted) {
			return cl.Spec.ResourceName, true, nil
		}
	}
	f.bucketyWaiting = fmt.Sprintf("waiting for Buckety %s to hold its claim on %s", b.Name, b.Status.BackendResourceName)
	f.claimPending = true
	return "", false, nil
}

// secretCreated reports a created Secret in an event, except the first
// Secret of an implicit access: its Buckety's event (Provisioned, or
// ImplicitAccessCreated) already named the access and the Secret it
// writes, and an event is an API write too.
func (r *Reconciler) secretCreated(a *v1.BucketyAccess, name string, data map[string][]byte) {
	if a.Labels[v1.ImplicitLabel] == "true" && a.Status.ObservedGeneration == 0 {
		return
	}
	r.event(a, corev1.EventTypeNormal, "SecretWritten", "WriteSecret", fmt.Sprintf("created Secret %s with keys %v", name, keys(data)))
}

// owns reports whether s is this access's Secret.
func owns(a *v1.BucketyAccess, s *corev1.Secret) bool {
	return s.Labels[v1.ManagedByLabel] == v1.ManagedByValue && s.Labels[v1.AccessLabel] == a.Name && metav1.IsControlledBy(s, a)
}

// writeSecret creates or repairs the access's Secret. It reports a conflict
// when a Secret of that name exists that this access does not own.
//
// The cache holds only buckety's own Secrets, so a Secret missing from it
// may still exist (a foreign one, or this access's own, written moments ago
// and not yet seen). The create itself answers that: the API server refuses
// it when any Secret of that name exists, and only then is the Secret read
// fresh, to tell whose it is. A foreign Secret is never written to. While a
// conflict persists (it is retried every few seconds) the fresh read comes
// first, so a retry costs one read, not a refused create and a read.
func (r *Reconciler) writeSecret(ctx context.Context, a *v1.BucketyAccess, data map[string][]byte, f *facts) (bool, error) {
	name := a.Spec.CredentialsSecretName
	f.secretName = name
	key := types.NamespacedName{Namespace: a.Namespace, Name: name}
	s := &corev1.Secret{}
	err := r.Client.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		if !conflictReported(a) {
			cerr := r.createSecret(ctx, a, name, data)
			if cerr == nil {
				r.secretCreated(a, name, data)
				f.synced = true
				return false, nil
			}
			if !apierrors.IsAlreadyExists(cerr) {
				return false, fmt.Errorf("create Secret %s: %w", name, cerr)
			}
		}
		err = r.APIReader.Get(ctx, key, s)
	}
	switch {
	case apierrors.IsNotFound(err):
		// Gone since the refused create (or, after a conflict, the foreign
		// Secret was removed): create it now.
		if err := r.createSecret(ctx, a, name, data); err != nil {
			return false, fmt.Errorf("create Secret %s: %w", name, err)
		}
		r.secretCreated(a, name, data)
	case err != nil:
		return false, err
	case !owns(a, s):
		owner := fmt.Sprintf("was not created by buckety for this access (no %s=%s label and owner reference)", v1.ManagedByLabel, v1.ManagedByValue)
		if s.Labels[v1.ManagedByLabel] == v1.ManagedByValue && s.Labels[v1.AccessLabel] != a.Name {
			owner = fmt.Sprintf("belongs to BucketyAccess %s", s.Labels[v1.AccessLabel])
		}
		f.secretConflict = fmt.Sprintf("Secret %s already exists and %s; it is never overwritten: delete or rename it, or choose another credentialsSecretName", name, owner)
		r.event(a, corev1.EventTypeWarning, v1.ReasonSecretConflict, "WriteSecret", f.secretConflict)
		return true, nil
	case !sameData(s.Data, data) || s.Type != corev1.SecretTypeOpaque:
		before := s.DeepCopy()
		s.Data = data
		if err := r.Client.Patch(ctx, s, ctrl.MergeFrom(before)); err != nil {
			return false, fmt.Errorf("repair Secret %s: %w", name, err)
		}
		r.event(a, corev1.EventTypeNormal, "SecretRepaired", "WriteSecret", fmt.Sprintf("Secret %s did not hold the expected keys; rewrote %v", name, keys(data)))
	}
	f.synced = true
	return false, nil
}

// createSecret creates the access's Secret, labelled and owned by a.
func (r *Reconciler) createSecret(ctx context.Context, a *v1.BucketyAccess, name string, data map[string][]byte) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: a.Name}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := controllerutil.SetControllerReference(a, s, r.Client.Scheme()); err != nil {
		return err
	}
	return r.Client.Create(ctx, s)
}

// conflictReported reports whether a's status, as read, already reports a
// Secret conflict.
func conflictReported(a *v1.BucketyAccess) bool {
	c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Reason == v1.ReasonSecretConflict
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reconcileDelete revokes what Grant minted, deletes the Secret and
// releases the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, a *v1.BucketyAccess, f *facts) (reconcile.Result, error) {
	f.deleting = true
	if !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
		return reconcile.Result{}, nil
	}
	if a.Status.Principal != "" {
		// Something was minted on the backend: revoking it must succeed.
		b := &v1.Buckety{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.BucketyRef.Name}, b); err != nil {
			return reconcile.Result{}, fmt.Errorf("revoke %s: get Buckety: %w", a.Status.Principal, err)
		}
		e, problem := shared.Resolve(r.Backends, b.Spec.Backend, shared.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
		if problem != nil {
			f.problem = problem
			return reconcile.Result{RequeueAfter: shared.Jitter(r.Recheck)}, nil
		}
		if err := e.Backend.Revoke(ctx, drivers.Access{Resource: b.Status.BackendResourceName, Namespace: a.Namespace, Name: a.Name, Role: string(a.Spec.Role), Parameters: a.Spec.Parameters}); err != nil {
			f.Record(err)
			return reconcile.Result{}, fmt.Errorf("revoke %s: %w", a.Status.Principal, err)
		}
	}
	s := &corev1.Secret{}
	key := types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName}
	err := r.Client.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		// A Secret written moments ago (or just before an API server
		// restart) may not be cached yet: ask the API server before
		// concluding there is nothing to delete.
		err = r.APIReader.Get(ctx, key, s)
	}
	switch {
	case err == nil && owns(a, s):
		if err := r.Client.Delete(ctx, s, ctrl.Preconditions{UID: &s.UID}); ctrl.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	case err != nil && !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	if r.Backoff != nil {
		r.Backoff.Reset(a.UID)
	}
	return reconcile.Result{}, shared.RemoveFinalizer(ctx, r.Client, a)
}

func (r *Reconciler) event(a *v1.BucketyAccess, typ, reason, action, note string) {
	// A conflict is retried every few seconds; report it once per episode.
	if reason == v1.ReasonSecretConflict {
		if c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady); c != nil && c.Reason == v1.ReasonSecretConflict {
			return
		}
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(a, nil, typ, reason, action, "%s", note)
	}
}
