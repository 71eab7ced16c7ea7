package buckety

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/budget"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/internal/naming"
	"github.com/Yolean/buckety-controller/internal/sharing"
)

// DeletePassInterval is how soon a deletion in progress is continued.
const DeletePassInterval = time.Second

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
	if held, err := r.heldBack(ctx, b, r.accesses, f); err != nil || held {
		// Access deletions trigger this reconcile through the watch.
		return reconcile.Result{}, err
	}
	// The cache shows none: the API server is asked before the resource
	// goes (accessesLagging).
	held, err := r.heldBack(ctx, b, r.accessesLagging, f)
	if err != nil {
		return reconcile.Result{}, err
	}
	if held {
		// No watch of this controller's wakes it for these until they
		// reach its cache: retried on the slow backoff, so a tenant's
		// access labelled out of every shard costs a list every 2
		// minutes, not one every few seconds.
		d := retry.PermanentBase
		if r.Backoff != nil {
			d = r.Backoff.Next(b.UID, retry.Permanent)
		}
		return reconcile.Result{RequeueAfter: d}, nil
	}
	owned, err := r.Claims.Owned(ctx, b.UID)
	if err != nil {
		return reconcile.Result{}, err
	}
	for i := range owned {
		cl := &owned[i]
		f.recordUnmarked = false
		res, done, deleted, err := r.deleteOrRetain(ctx, b, cl, f)
		if !done {
			return res, err
		}
		switch {
		case deleted:
			err = r.Claims.Release(ctx, cl)
			r.wake(ctx, cl)
		case f.recordUnmarked:
			// Left on the backend, whose record still holds it for a
			// Buckety of this name: the claim says so, so a Buckety
			// applied again under the name takes it as retained.
			if _, err = r.Claims.LetGoRecordUnmarked(ctx, cl); err == nil {
				r.wake(ctx, cl)
			}
		default:
			// Left on the backend: it keeps counting against the
			// namespace, as retained, until a maintainer releases it.
			if err = r.recordBeforeRetain(ctx, b, cl); err == nil {
				err = r.letGo(ctx, cl)
			}
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("release claim on %s: %w", cl.Spec.ResourceName, err)
		}
	}
	r.Waiters.Done(ctrl.ObjectKeyFromObject(b))
	switch {
	case len(owned) > 0 || b.Status.BackendResourceName == "":
	case b.Spec.RetentionPolicy == v1.RetentionDelete:
		// A pass that deleted the resource and released its claim, then
		// died before the finalizer went, leaves no claim either: "left in
		// place" would be false.
		r.event(b, corev1.EventTypeNormal, v1.EventRetained, v1.EventActionDelete, fmt.Sprintf("buckety holds no claim of this Buckety on backend %s, so this pass deletes nothing: %s was deleted by an earlier pass, or is left in place", b.Status.Backend, b.Status.BackendResourceName))
	default:
		r.event(b, corev1.EventTypeNormal, v1.EventRetained, v1.EventActionDelete, fmt.Sprintf("left %s on backend %s in place: buckety holds no claim of this Buckety on it", b.Status.BackendResourceName, b.Status.Backend))
	}
	r.mu.Lock()
	delete(r.deleted, ctrl.ObjectKeyFromObject(b))
	delete(r.lowered, ctrl.ObjectKeyFromObject(b))
	r.mu.Unlock()
	if r.Backoff != nil {
		r.Backoff.Reset(b.UID)
	}
	return reconcile.Result{}, objects.RemoveFinalizer(ctx, r.Client, b)
}

// heldBack lists the accesses naming b with list, records in f those that
// hold b's deletion back, deletes b's implicit access among them
// (f.waitingImplicit), and reports whether any holds it back.
func (r *Reconciler) heldBack(ctx context.Context, b *v1.Buckety, list func(context.Context, *v1.Buckety) ([]v1.BucketyAccess, error), f *facts) (bool, error) {
	accesses, err := list(ctx, b)
	if err != nil {
		return false, err
	}
	for i := range accesses {
		a := &accesses[i]
		if IsImplicit(a, b) {
			if !a.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
				// Being deleted with buckety's part of it done, kept only
				// by someone else's finalizer (a tenant's, a policy
				// tool's): as for an explicit access below, that must
				// not keep the Buckety waiting for ever.
				continue
			}
			f.waitingImplicit = true
			if a.DeletionTimestamp.IsZero() {
				if _, err := deleteImplicit(ctx, r.Client, a); err != nil {
					return false, err
				}
			}
			continue
		}
		switch {
		case !a.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(a, v1.Finalizer):
			// Being deleted, and buckety's finalizer gone: buckety's part
			// of it is done (its credential revoked, its Secret deleted),
			// or its tenant took the finalizer off, and then its own
			// passes and the orphan check revoke whatever it still holds
			// whatever the finalizers. What keeps it is someone else's
			// finalizer, which must not keep this Buckety too (another
			// namespace's tenant would keep its owner's deletion, and
			// the owner's namespace, waiting for ever).
		case a.Namespace == b.Namespace:
			f.blockedBy = append(f.blockedBy, a.Name)
		case !a.WithdrawnFrom(b.Namespace, b.Name):
			// Another namespace's access, shared with it: it holds the
			// deletion back as the Buckety's own do, until it is deleted
			// or (its consent withdrawn) holds nothing.
			holds, err := r.foreignHolds(ctx, b, a)
			if err != nil {
				return false, err
			}
			if holds {
				f.blockedBy = append(f.blockedBy, a.Namespace+"/"+a.Name)
			}
		default:
			// Withdrawn, as its status says. A spec change its pass
			// has not caught up with may be one the Buckety shares (a
			// role it allows), which that pass would grant: it holds
			// the deletion back as a shared one does. Any other change
			// (spec.rotation, as often as its tenant likes) does not.
			again, err := r.sharesAgain(ctx, b, a)
			if err != nil {
				return false, err
			}
			if again {
				f.blockedBy = append(f.blockedBy, a.Namespace+"/"+a.Name)
			}
		}
	}
	return len(f.blockedBy) > 0 || f.waitingImplicit, nil
}

// foreignHolds reports whether access a of another namespace, whose
// status does not show it withdrawn from b, holds b's deletion back: b
// shares with it now (sharedNow), or a credential record of it is still
// bound to b (its revocation is not done), read from the API server. One
// b no longer shares with and bound to b by no record holds nothing,
// whatever its status says: its tenant can keep that status from ever
// being written (the access grown by metadata-only patches to just under
// the API server's request limit), and its withdrawal (credentials
// revoked, Secret deleted) does not wait for that write. Were the status
// trusted, another namespace once shared with could keep the owner's
// deletion, and its namespace's, waiting for ever.
func (r *Reconciler) foreignHolds(ctx context.Context, b *v1.Buckety, a *v1.BucketyAccess) (bool, error) {
	if shared, err := r.sharedNow(ctx, b, a); err != nil || shared {
		return shared, err
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	var list v1.BucketyCredentialList
	if err := reader.List(ctx, &list, ctrl.MatchingLabels{v1.ClaimOwnerLabel: string(a.UID)}); err != nil {
		return false, fmt.Errorf("list the credentials of access %s/%s, which Buckety %s no longer shares with: %w", a.Namespace, a.Name, b.Name, err)
	}
	for i := range list.Items {
		c := &list.Items[i]
		if c.Spec.Owner.UID != string(a.UID) {
			continue
		}
		// A record from before credentials were bound (no Buckety) may
		// be b's.
		if c.Spec.BucketyUID == "" || c.Spec.BucketyUID == string(b.UID) || slices.ContainsFunc(c.Spec.Resources, func(cr v1.CredentialResource) bool { return cr.BucketyUID == string(b.UID) }) {
			return true, nil
		}
	}
	return false, nil
}

// sharesAgain reports whether access a of another namespace, withdrawn
// from b as its status says, has a spec its last pass did not see (its
// Ready condition's observedGeneration: status.observedGeneration moves
// only when it is Ready) under which b shares with it now (its role), in
// a namespace that is not being deleted.
func (r *Reconciler) sharesAgain(ctx context.Context, b *v1.Buckety, a *v1.BucketyAccess) (bool, error) {
	if c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady); c == nil || c.ObservedGeneration == a.Generation {
		return false, nil
	}
	return r.sharedNow(ctx, b, a)
}

// sharedNow reports whether b shares with access a of another namespace
// now (its role), in a namespace that is not being deleted.
func (r *Reconciler) sharedNow(ctx context.Context, b *v1.Buckety, a *v1.BucketyAccess) (bool, error) {
	n := &corev1.Namespace{}
	switch err := r.Client.Get(ctx, types.NamespacedName{Name: b.Namespace}, n); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case !n.DeletionTimestamp.IsZero() || n.Status.Phase == corev1.NamespaceTerminating:
		// Shares nothing any more (the access's pass withdraws for
		// the same reason).
		return false, nil
	}
	e, ok := r.Backends.Get(b.Status.Backend)
	if !ok {
		if e, ok = r.Backends.Get(b.Spec.Backend); !ok {
			return false, nil
		}
	}
	why, err := sharing.Check(ctx, r.Client, e.Config, b, a.Namespace, a.Spec.Role)
	return err == nil && why == "", err
}

// accessesLagging are b's namespace's accesses naming b that the API
// server holds, read past the cache, which showed none. A cache lags its
// watch, and a shard's shows only what is labelled with its slots: after
// an upgrade to shards the labeller labels old objects one at a time, so
// a shard can see a Buckety being deleted before the accesses that name
// it. Without this read the resource would be deleted under them. One
// namespaced list per deletion that is about to touch the backend; the
// accesses of other namespaces that a shared Buckety's deletion waits for
// are labelled for every shard at admission and are not read again here.
func (r *Reconciler) accessesLagging(ctx context.Context, b *v1.Buckety) ([]v1.BucketyAccess, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	var list v1.BucketyAccessList
	if err := r.APIReader.List(ctx, &list, ctrl.InNamespace(b.Namespace)); err != nil {
		return nil, fmt.Errorf("list the accesses of namespace %s before Buckety %s is deleted: %w", b.Namespace, b.Name, err)
	}
	key := objects.RefKey(b.Namespace, b.Name)
	return slices.DeleteFunc(list.Items, func(a v1.BucketyAccess) bool { return !slices.Contains(objects.RefKeys(&a), key) }), nil
}

// deleteOrRetain handles one claimed resource of a Buckety being deleted.
// done is false while the deletion is in progress or failed; deleted is
// true when the resource was deleted.
func (r *Reconciler) deleteOrRetain(ctx context.Context, b *v1.Buckety, cl *v1.BucketyClaim, f *facts) (res reconcile.Result, done, deleted bool, err error) {
	name := cl.Spec.ResourceName
	// eventType is Normal for a resource kept as the Buckety's
	// retentionPolicy or the backend's rules say, Warning for one kept
	// against retentionPolicy Delete because it is not the resource the
	// Buckety held (recordGone): someone should look at it.
	eventType := corev1.EventTypeNormal
	retain := func(why string) (reconcile.Result, bool, bool, error) {
		if claims.Written(cl.Spec.Phase) {
			why += fmt.Sprintf("; it keeps counting against namespace %s's limits on the backend until a cluster maintainer releases it (kubectl delete bucketyclaim %s)", b.Namespace, cl.Name)
		}
		if cl.Spec.Phase != v1.ClaimClaimed {
			r.event(b, eventType, v1.EventRetained, v1.EventActionDelete, fmt.Sprintf("left %s on backend %s in place: %s", name, cl.Spec.Backend, why))
		}
		return reconcile.Result{}, true, false, nil
	}
	// markKept writes on the backend's record of a resource this Buckety
	// wrote to what keeping it means: handed over (the backend hands its
	// resources over, whatever retentionPolicy says), or retained (the
	// record no longer re-attaches it to a Buckety of this name without
	// the adoption keys: an adopted one taken back as Created would be
	// deleted by the next Delete, without adoption.deleteAdopted). False
	// when the write failed (in f).
	markKept := func(mark func(context.Context, *v1.Buckety, *backends.Entry, drivers.Resource) error) bool {
		if !claims.Written(cl.Spec.Phase) {
			return true
		}
		e, ok := r.Backends.Get(cl.Spec.Backend)
		if !ok {
			// Not reachable now; the retained claim carries what
			// the record could not say (recordUnmarked).
			f.recordUnmarked = true
			return true
		}
		at := backendResource(e, name, budget.EffectiveParameters(e.Config, b), cl)
		if err := mark(ctx, b, e, at); err != nil {
			f.Record(err)
			return false
		}
		return true
	}
	// failed paces the retries of a record that could not be read or
	// written on the Buckety's backoff, as a failed Delete is: a backend
	// that hangs until the request timeout held a worker each second per
	// deleted Buckety, and sixteen of them every worker.
	failed := func() reconcile.Result {
		if r.Backoff == nil {
			return reconcile.Result{RequeueAfter: retry.TransientBase}
		}
		return reconcile.Result{RequeueAfter: r.Backoff.Next(b.UID, retry.Transient)}
	}
	// A backend that reaches another service than the one the resource
	// is on (servicechange.go) is asked nothing more, neither to delete
	// nor to mark a record kept: the deletion finishes as
	// retentionPolicy Retain would, and leaves the resource of the name
	// there as it is.
	switch why, err := r.otherService(ctx, cl); {
	case err != nil:
		f.Record(err)
		return failed(), false, false, nil
	case why != "":
		eventType = corev1.EventTypeWarning
		if b.Spec.RetentionPolicy == v1.RetentionDelete {
			why += "; retentionPolicy Delete does not delete it: the deletion finishes as retentionPolicy Retain would"
		}
		return retain(why)
	}
	if e, ok := r.Backends.Get(cl.Spec.Backend); ok && e.Config.HandOverTo() != "" && claims.Written(cl.Spec.Phase) {
		// Never deleted, nor marked retained (the installation taking it
		// over would find it another's): a deletion that came before any
		// pass marked it handed over marks it now.
		if !markKept(r.handOverOwner) {
			return failed(), false, false, nil
		}
		return retain(fmt.Sprintf("backend %s hands its resources over to installation %s (ownership.handOverTo), whatever retentionPolicy says", e.Name, e.Config.HandOverTo()))
	}
	switch {
	case b.Spec.RetentionPolicy != v1.RetentionDelete:
		if !markKept(r.retainOwner) {
			return failed(), false, false, nil
		}
		return retain("retentionPolicy Retain")
	case !claims.Deletable(cl, r.deletesAdopted(cl.Spec.Backend)):
		if !markKept(r.retainOwner) {
			return failed(), false, false, nil
		}
		switch cl.Spec.Phase {
		case v1.ClaimAdopting:
			return retain("it was adopted, not created, by buckety, and the adoption never settled")
		case v1.ClaimAdopted:
			return retain("it was adopted, not created, by buckety (the backend does not set adoption.deleteAdopted)")
		}
		return retain("this Buckety never wrote to it")
	}
	e, problem := backends.Resolve(r.Backends, cl.Spec.Backend,
		backends.Sticky{Backend: cl.Spec.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
	if problem != nil {
		f.problem = problem
		return reconcile.Result{RequeueAfter: retry.Jitter(r.Recheck)}, false, false, nil
	}
	src := naming.Source{Name: b.Name, Namespace: b.Namespace, Labels: b.Labels, BackendName: e.Name, Defaults: e.Config.Defaults}
	if err := e.Config.CheckNameToDelete(src, name); err != nil {
		return retain("the backend's name policy does not give this name to namespace " + b.Namespace + " (" + err.Error() + ")")
	}
	// Where the resource lives is what the claim recorded, not what the
	// spec says now: a tenant may edit a Buckety being deleted, and a
	// changed location parameter must never point the delete at a
	// resource of the same name elsewhere.
	at := backendResource(e, name, budget.EffectiveParameters(e.Config, b), cl)
	// The record on the backend has the last word: a resource another
	// installation holds (or this one handed over) is never deleted.
	why, gone, err := r.deletableByRecord(ctx, b, e, cl, at)
	if gone {
		// The resource this Buckety held is gone already: the deletion
		// finishes as retentionPolicy Retain would, and leaves the one
		// under its name now as it is.
		eventType = corev1.EventTypeWarning
		why += "; retentionPolicy Delete does not delete it: the deletion finishes as retentionPolicy Retain would"
	}
	if err == nil && why == "" {
		// Nor one its claim says it created, holding someone else's
		// content (createdElsewhere).
		// An empty one without any record may be deleted: nothing of
		// anyone's is lost, and a creator that records it next finds it
		// gone and creates it again.
		why, _, err = r.createdElsewhere(ctx, b, e, cl, at)
	}
	if err == nil && why != "" {
		return retain(why)
	}
	if err == nil {
		err = e.Backend.Delete(ctx, at)
		if drivers.IsReplaced(err) {
			// The driver found the resource under the name is not the
			// one the record was written for (kadm: a topic of another
			// ID): the one this Buckety held is gone, as for
			// deletableByRecord's gone, and this one is left alone.
			// The record, kept apart from the topic, is marked retained
			// as any kept resource's (still naming the held topic's ID,
			// so the one under the name stays refused): a Held record
			// of a Buckety gone would leave the name to no one once
			// the claim is released.
			if !markKept(r.retainOwner) {
				return failed(), false, false, nil
			}
			eventType = corev1.EventTypeWarning
			return retain(err.Error() + "; retentionPolicy Delete does not delete it: the deletion finishes as retentionPolicy Retain would")
		}
	}
	if err == nil {
		err = r.dropOwner(ctx, e, at)
	}
	var ip *drivers.InProgressError
	switch {
	case errors.As(err, &ip):
		total := r.addDeleted(b, ip.Done)
		f.deleteProgress = fmt.Sprintf("deleting %s on backend %s: %d removed so far; %s", name, e.Name, total, ip.Message)
		if ip.Done == 0 && r.Backoff != nil {
			// Nothing removed and more to do (a server whose DeleteBucket
			// counts entries its listings never show, or that lists empty
			// pages): waits that grow, and no event each pass, where the
			// next pass would come every second with an event, for ever.
			return reconcile.Result{RequeueAfter: r.Backoff.Next(b.UID, retry.Transient)}, false, false, nil
		}
		if r.Backoff != nil {
			r.Backoff.Reset(b.UID)
		}
		r.event(b, corev1.EventTypeNormal, v1.EventDeletionProgress, v1.EventActionDelete, f.deleteProgress)
		return reconcile.Result{RequeueAfter: DeletePassInterval}, false, false, nil
	case err != nil:
		f.Record(err)
		d := retry.TransientBase
		if r.Backoff != nil {
			d = r.Backoff.Next(b.UID, retry.Transient)
		}
		return reconcile.Result{RequeueAfter: d}, false, false, nil
	}
	why = "retentionPolicy Delete"
	if cl.Spec.Phase == v1.ClaimAdopted {
		why += "; adopted, and the backend sets adoption.deleteAdopted"
	}
	r.event(b, corev1.EventTypeNormal, v1.EventDeleted, v1.EventActionDelete, fmt.Sprintf("deleted %s on backend %s (%s)", name, e.Name, why))
	return reconcile.Result{}, true, true, nil
}

// deletesAdopted reports whether the maintainer lets retentionPolicy Delete
// delete adopted resources on the backend (adoption.deleteAdopted). A
// backend no longer configured does not.
func (r *Reconciler) deletesAdopted(backend string) bool {
	e, ok := r.Backends.Get(backend)
	return ok && e.Config.DeletesAdopted()
}

// addDeleted adds n to what the deletion of b removed so far, and returns
// the sum. It is kept by name, with the UID it counts for: a Buckety of
// the name made again (its finalizer removed by hand mid-deletion) counts
// from nothing, and a pass that finds the name gone drops it
// (forgetLowering's twin in Reconcile), so the map holds no more than the
// Bucketies being deleted.
func (r *Reconciler) addDeleted(b *v1.Buckety, n int64) int64 {
	key := ctrl.ObjectKeyFromObject(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deleted == nil {
		r.deleted = map[types.NamespacedName]deletedSoFar{}
	}
	d := r.deleted[key]
	if d.uid != b.UID {
		d = deletedSoFar{uid: b.UID}
	}
	d.n += n
	r.deleted[key] = d
	return d.n
}

// deletedSoFar is what the deletion of the Buckety uid removed so far.
type deletedSoFar struct {
	uid types.UID
	n   int64
}

// recordBeforeRetain records what a claim made before its backend's budget
// existed counts, before the claim is retained: the namespace's other
// resources count such a claim by its owner's parameters (othersUse), and
// once retained its owner is gone, so it counted nothing while its topic
// or bucket kept its data, and a tenant could delete with Retain and fill
// the room again, without end.
func (r *Reconciler) recordBeforeRetain(ctx context.Context, b *v1.Buckety, cl *v1.BucketyClaim) error {
	if cl.Spec.Budgeted != nil || cl.Spec.Owner.UID != string(b.UID) {
		return nil
	}
	e, ok := r.Backends.Get(cl.Spec.Backend)
	if !ok || !e.Config.Limits.HasByteBudget() {
		return nil
	}
	return r.Claims.RecordBudgeted(ctx, cl, budget.Counted(budget.Footprint(e.Config, budget.EffectiveParameters(e.Config, b))))
}
