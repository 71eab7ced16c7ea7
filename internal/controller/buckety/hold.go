package buckety

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

// A pass that provisions a Buckety's resource for a generation the cache
// does not show recorded puts its status in Held before it creates or
// wakes any access (holdProvisioned), so the accesses proceed at once; if
// nothing but its accesses is left at its end, it holds the status write
// back (holding, hold) and the pass the first access's status wakes writes
// it, Ready, once. A pass on a status recorded Ready that finds only new
// accesses pending holds its write back the same way (holdingReady,
// holdReady), so Ready does not flip for them. See Held.

// holdProvisioned puts b's status, with the resource provisioned for its
// generation, in Held for the accesses to read.
func (r *Reconciler) holdProvisioned(b *v1.Buckety, f *facts) {
	if r.Held == nil || f.recorded {
		return
	}
	st := b.Status.DeepCopy()
	status.Apply(&st.Conditions, b.Generation, []status.Cond{provisioned(b, f, readinessResult{provisioned: true})})
	r.Held.Put(b, st)
}

// onlyAccessesLeft reports whether this pass left nothing but accesses
// pending: nothing went wrong, the resource is provisioned with no drift
// or shortfall, and no deletion or drain is under way.
func (r *Reconciler) onlyAccessesLeft(b *v1.Buckety, f *facts, reterr error) bool {
	return r.Held != nil && reterr == nil && !f.deleting && !f.drainTouched && !drainActive(b) && f.provisioned && f.drift == nil &&
		len(f.shortfalls) == 0 && f.implicitErr == "" && len(f.accessesPending) > 0 && f.Unavailable == nil && f.AccessDenied == nil && f.Other == nil && f.claimErr == nil
}

// holding reports whether this pass's status write waits: the resource is
// provisioned for a generation whose status is not recorded, nothing went
// wrong, only accesses are pending, and the hold began less than
// Held.For ago (Held.SilentFor while no pending access has said anything).
func (r *Reconciler) holding(b *v1.Buckety, f *facts, reterr error) bool {
	if f.recorded || !r.onlyAccessesLeft(b, f, reterr) {
		return false
	}
	return !f.held || time.Since(f.heldSince) < r.Held.limitFor(f.pendingSpoke)
}

// holdingReady reports whether this pass's status write waits on a
// Buckety whose status is recorded Ready (see Held): only accesses are
// pending, none of them has reported why it is not Ready, the status a
// pass finding them in sync would write is the one recorded (nothing else
// changed), and the hold began less than Held.For ago. Its first call of
// a hold begins it (f.pendingSince).
func (r *Reconciler) holdingReady(b, orig *v1.Buckety, f *facts, reterr error) bool {
	if !f.recorded || f.pendingSpoke || !r.onlyAccessesLeft(b, f, reterr) {
		return false
	}
	inSync := *f
	inSync.accessesPending = nil
	st := b.Status.DeepCopy()
	status.Apply(&st.Conditions, b.Generation, conditions(b, &inSync))
	if !meta.IsStatusConditionTrue(st.Conditions, v1.ConditionReady) || st.ObservedGeneration != b.Generation || !equality.Semantic.DeepEqual(st, &orig.Status) {
		return false
	}
	f.pendingSince = r.Held.pendingSince(b)
	return time.Since(f.pendingSince) < r.Held.Limit()
}

// holdReady keeps the recorded Ready status while the accesses are
// pending, and comes back when the hold ends, should no access wake the
// Buckety before (each access turning Ready or failing does).
func (r *Reconciler) holdReady(f *facts, res reconcile.Result) reconcile.Result {
	if left := r.Held.Limit() - time.Since(f.pendingSince) + 100*time.Millisecond; res.RequeueAfter == 0 || left < res.RequeueAfter {
		res.RequeueAfter = left
	}
	return res
}

// hold keeps the status this pass computed, wakes the accesses it concerns
// when the hold begins (no status write wakes them), and comes back when
// the hold ends, should no access wake the Buckety before.
func (r *Reconciler) hold(ctx context.Context, b *v1.Buckety, f *facts, res reconcile.Result) reconcile.Result {
	r.Held.Put(b, &b.Status)
	since := f.heldSince
	if !f.held {
		since = time.Now()
		r.Wakes.ProvisionedFor(ctx, b, f.accessesPending)
	}
	if left := r.Held.limitFor(f.pendingSpoke) - time.Since(since) + 100*time.Millisecond; res.RequeueAfter == 0 || left < res.RequeueAfter {
		res.RequeueAfter = left
	}
	return res
}
