package buckety

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
)

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

// acquire takes the claim through Store.Acquire (phase Claimed, the
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
	r.event(b, corev1.EventTypeWarning, v1.EventNameConflict, v1.EventActionClaim, fmt.Sprintf("%s on backend %s is owned by Buckety %s", f.resourceName, e.Name, f.conflictOwner))
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
