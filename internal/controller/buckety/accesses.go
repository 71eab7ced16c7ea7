package buckety

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// reconcileAccesses materialises or removes the implicit access, then
// checks every access's Secret.
func (r *Reconciler) reconcileAccesses(ctx context.Context, b *v1.Buckety, f *facts) error {
	all, err := r.accesses(ctx, b)
	if err != nil {
		return err
	}
	// The accesses of namespaces b shares with are listed in its status,
	// and never decide its readiness: a consumer's Secret conflict or
	// role is its own business, and not the owner's to see.
	accesses, foreign := ownAndForeign(b, all)
	b.Status.SharedWith = sharedWith(b, foreign)
	if err := r.reconcileImplicit(ctx, b, accesses, f); err != nil {
		// Refused (the access webhook's limit, a ResourceQuota), or the
		// API server did not answer: Ready says so, where the chain,
		// with no access pending, would say the Buckety is in sync and
		// no Secret would ever come.
		if f.implicitErr == "" {
			f.implicitErr = "spec.defaultAccess: the implicit BucketyAccess could not be written, retrying: " + err.Error()
		}
		return err
	}
	f.accessesChecked = true
	backend := b.Spec.Backend
	if b.Status.Backend != "" {
		backend = b.Status.Backend
	}
	live := 0
	for _, a := range accesses {
		if !a.DeletionTimestamp.IsZero() {
			continue
		}
		live++
		ready := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
		// A Secret written for another backend was another Buckety's of
		// this name (deleted with its finalizer removed, made again on
		// this backend): at generation 1 too, it is not this one's yet.
		// So was one written for another Buckety's UID, on this backend
		// too (a status without it was written by an earlier release).
		elsewhere := (a.Status.Backend != "" && a.Status.Backend != backend) || (a.SecretUIDOf(b.Namespace, b.Name) != "" && a.SecretUIDOf(b.Namespace, b.Name) != b.UID)
		if ready == nil || ready.Status != metav1.ConditionTrue || a.Status.ObservedGeneration != a.Generation || a.SecretGenerationOf(b.Namespace, b.Name) != b.Generation || elsewhere {
			f.accessesPending = append(f.accessesPending, a.Name)
			f.pendingSpoke = f.pendingSpoke || (ready != nil && ready.Reason != v1.ReasonBucketyNotReady)
		}
		if meta.IsStatusConditionTrue(a.Status.Conditions, v1.ConditionScopingNotImplemented) {
			f.shared++
		}
	}
	if b.Spec.DefaultAccess != nil && live == 0 && f.implicitErr == "" {
		// The implicit access is not created yet, or is being deleted
		// (its Secret renamed, or another Buckety's of this name, deleted
		// with its finalizer removed), and no explicit access stands in
		// for it: named as it will be once created, so the Ready message
		// (and with it the status) does not change when the access
		// appears.
		f.accessesPending = append(f.accessesPending, b.Name)
	}
	// The cache lists an index's objects in no fixed order: sorted, the
	// message naming them changes only when the accesses do, not from one
	// pass to the next (each change a status write).
	slices.Sort(f.accessesPending)
	return nil
}

// accesses are the BucketyAccesses that name b: its namespace's, and
// those of namespaces it shares with.
func (r *Reconciler) accesses(ctx context.Context, b *v1.Buckety) ([]v1.BucketyAccess, error) {
	return objects.AccessesOf(ctx, r.Client, b.Namespace, b.Name)
}

// ownAndForeign splits the accesses naming b into those of its own
// namespace and those of namespaces it shares with.
func ownAndForeign(b *v1.Buckety, all []v1.BucketyAccess) (own, foreign []v1.BucketyAccess) {
	for i := range all {
		if all[i].Namespace == b.Namespace {
			own = append(own, all[i])
		} else {
			foreign = append(foreign, all[i])
		}
	}
	return own, foreign
}

// sharedWith is status.sharedWith for the live accesses of other
// namespaces: how many, and the first v1.MaxSharedHolders by namespace and
// name, with their role and whether they hold access now. nil when there
// are none.
func sharedWith(b *v1.Buckety, foreign []v1.BucketyAccess) *v1.SharedWith {
	var holders []v1.SharedHolder
	for i := range foreign {
		a := &foreign[i]
		if !a.DeletionTimestamp.IsZero() {
			continue
		}
		role := a.Spec.Role
		if role == "" {
			role = v1.RoleReadWrite
		}
		holders = append(holders, v1.SharedHolder{Namespace: a.Namespace, Name: a.Name, Role: role, Granted: !notShared(a, b)})
	}
	if len(holders) == 0 {
		return nil
	}
	slices.SortFunc(holders, func(x, y v1.SharedHolder) int {
		return strings.Compare(x.Namespace+"/"+x.Name, y.Namespace+"/"+y.Name)
	})
	out := &v1.SharedWith{Accesses: int32(len(holders))}
	out.Holders = holders[:min(len(holders), v1.MaxSharedHolders)]
	return out
}

// notShared reports whether access a reports that Buckety b does not
// share with it: Ready reason NotShared, or b in the withdrawn Bucketies
// of an access naming several.
func notShared(a *v1.BucketyAccess, b *v1.Buckety) bool {
	if a.Several() {
		return a.WithdrawnFrom(b.Namespace, b.Name)
	}
	c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Reason == v1.ReasonNotShared
}

// IsImplicit reports whether a is b's implicit access: labelled so, of
// b's namespace, and controlled by b. The label and the owner reference
// are a tenant's to write, on an access of its own naming another
// namespace's Buckety too (metadata alone does not pass the webhook):
// such an access is never taken for the Buckety's own, whose deletion
// would otherwise wait for it, kept by that tenant's finalizer, for ever.
func IsImplicit(a *v1.BucketyAccess, b *v1.Buckety) bool {
	return a.Namespace == b.Namespace && a.Labels[v1.ImplicitLabel] == "true" && metav1.IsControlledBy(a, b)
}

// recentlyCreated is how long an implicit access this controller created
// is taken to exist while the cache does not show it: the passes right
// after the one that created it (its own writes wake them) would otherwise
// try the create again, and be refused.
const recentlyCreated = 30 * time.Second

// pruneCreatedImplicit drops the entries of createdImplicit the cache never
// showed (the access was deleted at once), at most once per
// recentlyCreated, so a burst of creates costs no scan each.
func (r *Reconciler) pruneCreatedImplicit() {
	now := time.Now()
	r.mu.Lock()
	due := now.Sub(r.prunedImplicit) > recentlyCreated
	if due {
		r.prunedImplicit = now
	}
	r.mu.Unlock()
	if !due {
		return
	}
	r.createdImplicit.Range(func(k, at any) bool {
		if now.Sub(at.(time.Time)) >= recentlyCreated {
			r.createdImplicit.Delete(k)
		}
		return true
	})
}

// reconcileImplicit keeps the implicit access spec.defaultAccess asks
// for: it deletes it where no implicit access is wanted, brings it to what
// spec.defaultAccess says where it exists, and creates it once the
// Buckety's resource is provisioned. A Buckety whose name cannot name an
// access (v1.AccessNameTooLong) gets none, and says so (f.implicitErr).
func (r *Reconciler) reconcileImplicit(ctx context.Context, b *v1.Buckety, accesses []v1.BucketyAccess, f *facts) error {
	implicit, explicit := findImplicit(b, accesses)
	if implicit != nil {
		r.createdImplicit.Delete(b.UID) // the cache shows it
	}
	if b.Spec.DefaultAccess == nil || explicit > 0 {
		return r.removeImplicit(ctx, b, implicit, explicit)
	}
	if msg := v1.AccessNameTooLong(b.Name); msg != "" {
		// Admitted before the webhook checked it (or without the
		// webhook): an access of this name could never get its Secret,
		// so none is created (one created so reports it itself).
		f.implicitErr = fmt.Sprintf("spec.defaultAccess: the implicit BucketyAccess takes the Buckety's name, which %s; no implicit access is created: remove spec.defaultAccess and create a BucketyAccess with a name of at most %d characters", msg, v1.MaxAccessNameLength)
		return nil
	}
	if implicit != nil {
		return r.convergeImplicit(ctx, implicit, b.Spec.DefaultAccess)
	}
	if !r.implicitDue(b) {
		return nil
	}
	return r.createImplicit(ctx, b, f)
}

// findImplicit returns b's implicit access among its accesses (nil: none)
// and how many explicit ones there are.
func findImplicit(b *v1.Buckety, accesses []v1.BucketyAccess) (implicit *v1.BucketyAccess, explicit int) {
	for i := range accesses {
		if IsImplicit(&accesses[i], b) {
			implicit = &accesses[i]
		} else {
			explicit++
		}
	}
	return implicit, explicit
}

// removeImplicit deletes the implicit access, when there is one not
// already being deleted: spec.defaultAccess was removed, or an explicit
// access targets the Buckety (explicit > 0).
func (r *Reconciler) removeImplicit(ctx context.Context, b *v1.Buckety, implicit *v1.BucketyAccess, explicit int) error {
	if implicit == nil || !implicit.DeletionTimestamp.IsZero() {
		return nil
	}
	why := "spec.defaultAccess was removed"
	if explicit > 0 {
		why = "an explicit BucketyAccess targets this Buckety"
	}
	if gone, err := deleteImplicit(ctx, r.Client, implicit); err != nil || gone {
		return err
	}
	r.event(b, corev1.EventTypeNormal, v1.EventImplicitAccessRemoved, v1.EventActionReconcile, fmt.Sprintf("deleted implicit BucketyAccess %s: %s", implicit.Name, why))
	return nil
}

// implicitRole is the role spec.defaultAccess gives (readwrite unless set).
func implicitRole(da *v1.DefaultAccess) v1.Role {
	if da.Role == "" {
		return v1.RoleReadWrite
	}
	return da.Role
}

// convergeImplicit brings an existing implicit access to what da says:
// its role and Secret formats are patched; another Secret name, immutable
// on an access, replaces it (deleted here, created by a later pass).
func (r *Reconciler) convergeImplicit(ctx context.Context, implicit *v1.BucketyAccess, da *v1.DefaultAccess) error {
	role := implicitRole(da)
	switch {
	case !implicit.DeletionTimestamp.IsZero():
	case implicit.Spec.CredentialsSecretName != da.CredentialsSecretName:
		if _, err := deleteImplicit(ctx, r.Client, implicit); err != nil {
			return err
		}
	case implicit.Spec.Role != role || !slices.Equal(implicit.Spec.SecretFormats, da.SecretFormats):
		// With the resourceVersion read: the cache's copy may be of an
		// implicit access deleted since, whose name a tenant's own access
		// took; the patch must not rewrite that one's role.
		before := implicit.DeepCopy()
		implicit.Spec.Role = role
		implicit.Spec.SecretFormats = slices.Clone(da.SecretFormats)
		if err := r.Client.Patch(ctx, implicit, ctrl.MergeFromWithOptions(before, ctrl.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
	}
	return nil
}

// deleteImplicit deletes the implicit access a as read, and reports
// whether it was gone already. The read is the cache's, which may show an
// implicit access deleted since whose name a tenant's own access has
// taken: the UID precondition keeps the delete to the object read (a
// Conflict then: that one is gone, and the event of the new one wakes the
// Buckety again).
func deleteImplicit(ctx context.Context, c ctrl.Client, a *v1.BucketyAccess) (gone bool, err error) {
	err = c.Delete(ctx, a, ctrl.Preconditions{UID: &a.UID})
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return true, nil
	}
	return false, err
}

// implicitDue reports whether this pass creates the missing implicit
// access: not before the access can read the resource as provisioned, and
// not again while one a pass created moments ago is not in the cache yet.
func (r *Reconciler) implicitDue(b *v1.Buckety) bool {
	if r.Held == nil && !provisionedRecorded(b) {
		// The access waits for its Buckety's recorded Provisioned status;
		// created before that is written (by this pass), its first
		// reconcile would only write a waiting status that is overwritten
		// a moment later. The status patch of this pass triggers the next,
		// which creates it. With Held, this pass already put the
		// provisioned status where the access reads it (hold.go).
		return false
	}
	if at, ok := r.createdImplicit.Load(b.UID); ok && time.Since(at.(time.Time)) < recentlyCreated {
		// Created by a pass moments ago; the cache has not shown it yet.
		return false
	}
	return true
}

// createImplicit creates b's implicit access, born with its finalizer (one
// write instead of a create and a patch), and reports a creation after
// the first provisioning.
func (r *Reconciler) createImplicit(ctx context.Context, b *v1.Buckety, f *facts) error {
	da := b.Spec.DefaultAccess
	a := &v1.BucketyAccess{
		ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace, Labels: map[string]string{v1.ImplicitLabel: "true", shard.SlotLabel: shard.SlotValue(b.Namespace)}, Finalizers: []string{v1.Finalizer}},
		Spec:       v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: b.Name}, CredentialsSecretName: da.CredentialsSecretName, Role: implicitRole(da), SecretFormats: slices.Clone(da.SecretFormats)},
	}
	if err := controllerutil.SetControllerReference(b, a, r.Client.Scheme()); err != nil {
		return err
	}
	err := r.Client.Create(ctx, a)
	if apierrors.IsAlreadyExists(err) {
		return r.implicitTaken(ctx, b, a, f)
	}
	if err != nil {
		return err
	}
	r.pruneCreatedImplicit()
	r.createdImplicit.Store(b.UID, time.Now())
	if b.Status.ObservedGeneration != 0 {
		// The first provisioning's Provisioned event announced it; a later
		// creation (defaultAccess added, the access deleted or replaced)
		// is reported on its own.
		r.event(b, corev1.EventTypeNormal, v1.EventImplicitAccessCreated, v1.EventActionReconcile, fmt.Sprintf("created implicit BucketyAccess %s writing Secret %s", a.Name, da.CredentialsSecretName))
	}
	return nil
}

// implicitTaken decides, when the implicit access's name is taken, whether
// by this Buckety's own implicit access, created by an earlier pass the
// cache has not shown yet (nothing to do), or by another access
// (f.implicitErr).
func (r *Reconciler) implicitTaken(ctx context.Context, b *v1.Buckety, a *v1.BucketyAccess, f *facts) error {
	var reader ctrl.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	cur := &v1.BucketyAccess{}
	if gerr := reader.Get(ctx, ctrl.ObjectKeyFromObject(a), cur); gerr == nil && IsImplicit(cur, b) {
		return nil
	} else if gerr != nil && !apierrors.IsNotFound(gerr) {
		return gerr
	}
	f.implicitErr = fmt.Sprintf("spec.defaultAccess: a BucketyAccess named %s already exists in %s and is not this Buckety's implicit access", b.Name, b.Namespace)
	return nil
}
