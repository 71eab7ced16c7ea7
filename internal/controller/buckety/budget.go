package buckety

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/budget"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
)

// The namespace budget (config limits.partitions, diskBytes, quotaBytes),
// enforced again here after admission: the webhook sums from a cache that
// may lag a burst of creates. The controller sums the namespace's claims,
// which only it writes, each recording what its resource counts
// (claim.spec.budgeted), and checks and records under the namespace's gate
// (holdGate): a new claim is created with its figure, and a resource that
// grows records its new figure before Ensure applies it. A claim made
// before the budget existed counts what its owner's parameters say.

// withinBudget checks the budget for b, whose claim (nil for a new one)
// is not among claims. It records in f what a new claim must carry.
func (r *Reconciler) withinBudget(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, namespaceClaims []v1.BucketyClaim, own *v1.BucketyClaim) bool {
	if !e.Config.Limits.HasByteBudget() {
		return true
	}
	fp := budget.Footprint(e.Config, budget.EffectiveParameters(e.Config, b))
	var had v1.Budgeted
	switch {
	case own != nil && own.Spec.Budgeted != nil:
		had = *own.Spec.Budgeted
	case own != nil && claims.Written(own.Spec.Phase) && b.Generation == b.Status.ObservedGeneration:
		// Claimed before the budget existed, its resource on the backend
		// as its spec asks (the spec fully reconciled: an edit not yet
		// applied is growth to check, not what it has): it has what its
		// parameters count (a budget set below a namespace's use takes
		// nothing away, and must not hold a resource that existed before it
		// at BudgetExceeded), and its growth is checked from the figure
		// recorded now.
		had = budget.Counted(fp)
	}
	if errs := budget.Unbounded(nil, e.Config, fp); len(errs) > 0 {
		switch {
		case own != nil && own.Spec.Budgeted == nil:
			// Claimed before the budget existed, unbounded then as now: it
			// keeps working as it is (a budget never takes anything away),
			// uncounted, and any growth is checked once it is bounded.
			return true
		case own == nil, e.Config.Limits.DiskBytes.Bytes > 0 && len(fp.DiskRefused) > 0:
			// New, or setting what holds disk uncounted: refused (an
			// existing resource keeps its current parameters).
			f.budgetExceeded = errs[0].Detail
			return false
		}
		// A resource that counted and is unbounded now (admission refuses
		// the update that makes it so; this one came before the rule, as a
		// topic that left its partitions to the broker): the unbounded
		// dimensions keep what was recorded (budget.Kept), the others
		// are checked for growth below.
	}
	kept := budget.Kept(fp, budget.Counted(fp), had)
	asked := budget.AtLeastUsed(kept, had, r.usageAfterLowering(b, kept, had, f))
	others, err := r.othersUse(ctx, b, e, namespaceClaims)
	if err != nil {
		f.claimErr = err
		return false
	}
	if msg := budget.Exceeded(e.Config, b.Namespace, others, asked, had); msg != "" {
		f.budgetExceeded = msg
		r.Waiters.Wait(ctrl.ObjectKeyFromObject(b), limitKey(e.Name, b.Namespace))
		return false
	}
	f.budgeted = &asked
	return true
}

// othersUse sums what the namespace's claims other than b's count.
func (r *Reconciler) othersUse(ctx context.Context, b *v1.Buckety, e *backends.Entry, namespaceClaims []v1.BucketyClaim) (v1.Budgeted, error) {
	var sum v1.Budgeted
	for i := range namespaceClaims {
		cl := &namespaceClaims[i]
		if cl.Spec.Owner.UID == string(b.UID) {
			continue
		}
		if cl.Spec.Budgeted != nil {
			sum = budget.Add(sum, *cl.Spec.Budgeted)
			continue
		}
		owner := &v1.Buckety{}
		if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: cl.Spec.Owner.Namespace, Name: cl.Spec.Owner.Name}, owner); err != nil {
			if ctrl.IgnoreNotFound(err) != nil {
				return sum, fmt.Errorf("read Buckety %s/%s for its namespace's budget: %w", cl.Spec.Owner.Namespace, cl.Spec.Owner.Name, err)
			}
			continue
		}
		sum = budget.Add(sum, budget.Counted(budget.Footprint(e.Config, budget.EffectiveParameters(e.Config, owner))))
	}
	return sum, nil
}

// budgetFits is the check before Ensure on a resource that holds a claim:
// when what the parameters count differs from what the claim recorded,
// the growth is checked against the namespace's budget under its gate and
// the new figure recorded in the claim before anything is written to the
// backend. Shrinking always fits. A refused growth leaves the resource as
// it is.
func (r *Reconciler) budgetFits(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, cl *v1.BucketyClaim, params map[string]string) bool {
	if !e.Config.Limits.HasByteBudget() {
		return true
	}
	fp := budget.Footprint(e.Config, params)
	if cl.Spec.Budgeted != nil {
		// A counted resource whose parameters now leave a budgeted
		// dimension unbounded (config.retention.bytes or quota removed):
		// budget.Kept would keep counting the
		// old figure, which then looks unchanged, and Ensure would apply
		// unlimited retention or drop the quota. Admission refuses that
		// update; this holds where it did not run (a webhook down, behind
		// the controller's config, or bypassed). The resource keeps its
		// current parameters.
		if errs := budget.BecameUnbounded(field.NewPath("spec", "parameters"), e.Config, fp, *cl.Spec.Budgeted); len(errs) > 0 {
			f.budgetExceeded = errs[0].Field + ": " + errs[0].Detail
			return false
		}
	}
	asked := budget.Counted(fp)
	if cl.Spec.Budgeted != nil {
		kept := budget.Kept(fp, asked, *cl.Spec.Budgeted)
		asked = budget.AtLeastUsed(kept, *cl.Spec.Budgeted, r.usageAfterLowering(b, kept, *cl.Spec.Budgeted, f))
	}
	if cl.Spec.Budgeted != nil && *cl.Spec.Budgeted == asked {
		return true
	}
	if !r.holdGate(b, e, f) {
		return false
	}
	// Summed, never written (withinBudget): the cache's own objects, with
	// the claims this controller wrote that the cache does not show yet.
	items, err := r.Claims.InNamespace(ctx, e.Name, b.Namespace)
	if err != nil {
		f.claimErr = fmt.Errorf("sum the claims of namespace %s: %w", b.Namespace, err)
		return false
	}
	probe := *b
	probe.Spec.Parameters = params
	if !r.withinBudget(ctx, &probe, e, f, items, cl) {
		return false
	}
	if f.budgeted == nil {
		return true // grandfathered unbounded (withinBudget): nothing to record
	}
	if err := r.Claims.RecordBudgeted(ctx, cl, asked); err != nil {
		f.claimErr = err
		return false
	}
	f.claim = cl
	return true
}

// usage is what b's status says its bucket holds, when it says so of now
// (Reconciler.UsageMaxAge); nil when not known.
func (r *Reconciler) usage(b *v1.Buckety) *v1.Usage {
	return budget.FreshUsage(b.Status.Usage, r.UsageMaxAge, time.Now())
}

// usageAfterLowering is what b's bucket holds (usage) for a lowered quota
// (asked's below had's) to count: only a measurement taken after this
// process first found the quota lowered to that figure, by at least
// loweringSettle, when the pass that found it had the lowered quota
// applied on the server (which takes no write past it from then on). A
// fresh measurement taken before it says nothing of what was written
// since: a tenant could have it taken on an empty bucket, fill the bucket
// within the measurement's freshness, lower its quota, have the lowered
// figure counted, and fill another bucket under the same budget, without
// end. Until such a measurement the quota counts what it counted before
// (budget.AtLeastUsed with no usage), and the Buckety is looked at again
// when the next measurement is due (f.usageIn). The first sighting is
// kept in memory: a restarted process, or another shard's, finds it
// anew, which only makes the wait longer; so does a sighting forgotten
// (forgetLowering), which is why forgetting one is always safe. Without
// measurements (UsageMaxAge 0) none is kept: no usage would count anyway.
func (r *Reconciler) usageAfterLowering(b *v1.Buckety, asked, had v1.Budgeted, f *facts) *v1.Usage {
	key := ctrl.ObjectKeyFromObject(b)
	if r.UsageMaxAge <= 0 || asked.QuotaBytes <= 0 || asked.QuotaBytes >= had.QuotaBytes {
		r.forgetLowering(key)
		return r.usage(b)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	l, ok := r.lowered[key]
	if !ok || l.uid != b.UID || l.quota != asked.QuotaBytes {
		// Not found before, or found for a Buckety of this name since
		// deleted (its finalizer removed by hand) and made again: the
		// wait starts now.
		if r.lowered == nil {
			r.lowered = map[types.NamespacedName]lowering{}
		}
		l = lowering{uid: b.UID, quota: asked.QuotaBytes, seen: now}
		r.lowered[key] = l
	}
	after := l.seen.Add(loweringSettle)
	if u := r.usage(b); u != nil && u.MeasuredAt.Time.After(after) {
		return u
	}
	// The refresh runs every third of UsageMaxAge.
	next := max(after.Sub(now), 0) + r.UsageMaxAge/3 + loweringSettle
	if f.usageIn == 0 || next < f.usageIn {
		f.usageIn = next
	}
	return nil
}

// forgetLowering drops the lowering found for the Buckety key, if any:
// its quota is no longer lowered, or the Buckety is gone (deleted, its
// finalizer removed by hand, or out of this shard's cache). Each Buckety
// holds at most one entry, under its name, and every way it leaves the
// cache ends in a pass that finds it gone (Reconcile) and drops it, so the
// map never holds more than the Bucketies the shard serves; a shard
// released takes its Reconciler, map and all, with it. Dropping an entry
// is always safe: a quota still lowered is found anew by the next pass,
// which waits again for a measurement taken after that.
func (r *Reconciler) forgetLowering(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.lowered, key)
	r.mu.Unlock()
}

// loweringSettle is how long after a pass first found a quota lowered a
// measurement must be taken to count for it: the pass applies the quota
// on the server within its backend's request timeout.
const loweringSettle = 30 * time.Second

// lowering is a lowered quota a pass found, of the Buckety uid, and when
// this process first found it.
type lowering struct {
	uid   types.UID
	quota int64
	seen  time.Time
}
