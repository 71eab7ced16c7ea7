package buckety

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/budget"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
	"github.com/Yolean/buckety-controller/internal/controller/status"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

// Usage. Once per interval, per backend, the UsageRefresher measures every
// provisioned resource of the backend in one drivers.UsageReporter call
// (a few requests for a whole Kafka cluster or MinIO server), writes each
// Buckety's status.usage where a figure changed, and serves the usage and
// budget metrics. It writes nothing else: QuotaWarning is derived by the
// reconciler from status.usage and the parameters (quotaWarning), and the
// refresher enqueues a Buckety whose QuotaWarning would change, so the
// condition and its event come from the one place conditions are decided.
// A status write that changes only status.usage does not wake the
// reconciler (UsageOnly).

// UsageRewrite is how old status.usage may grow before the refresher
// writes it again with unchanged figures, so measuredAt says when the
// figures were last confirmed without a write per interval per Buckety.
const UsageRewrite = time.Hour

// UsageRefresher refreshes status.usage and the usage metrics. It runs only
// on the leader.
type UsageRefresher struct {
	periodic.LeaderOnly
	// Client reads from the manager's cache and patches status.
	Client ctrl.Client
	// Backends are the open backends.
	Backends *backends.Set
	// Interval is the period of each backend's refresh.
	Interval time.Duration
	// Wakes takes the Bucketies whose QuotaWarning would change to the
	// Buckety controller (QuotaWarningChanged).
	Wakes *wake.Channels
	// Log is the logger.
	Log logr.Logger
}

// Start implements manager.Runnable: one loop per backend until ctx ends.
// The first refresh comes one interval after the start, not at once: a
// leader that just started is re-verifying every Buckety, and a restart
// should cost the API server no status writes.
func (u *UsageRefresher) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(u.Interval):
	}
	var wg sync.WaitGroup
	for _, name := range u.Backends.Names() {
		e, ok := u.Backends.Get(name)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			periodic.Every(ctx, u.Interval, func(ctx context.Context) {
				if err := u.RefreshOnce(ctx, e); err != nil && ctx.Err() == nil {
					u.Log.Error(err, "usage refresh failed; next try in one interval", "backend", e.Name, "interval", u.Interval.String())
				}
			})
		}()
	}
	wg.Wait()
	return nil
}

// RefreshOnce measures one backend's resources, writes the status.usage
// that changed, enqueues the Bucketies whose QuotaWarning would change
// and replaces the backend's usage and budget metrics.
func (u *UsageRefresher) RefreshOnce(ctx context.Context, e *backends.Entry) error {
	// The cached objects themselves, not a copy of each per interval:
	// nothing here changes them (record copies the one it writes).
	var list v1.BucketyList
	if err := u.Client.List(ctx, &list, ctrl.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list Bucketies: %w", err)
	}
	var claimList v1.BucketyClaimList
	if err := u.Client.List(ctx, &claimList, ctrl.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list claims: %w", err)
	}
	if err := u.budgets(ctx, e, list.Items, claimList.Items); err != nil {
		return err
	}
	targets := sweepTargets(list.Items, claimList.Items, u.Backends, e.Name)
	usages, err := u.measure(ctx, e, targets)
	if err != nil {
		metrics.UsageRefreshes.WithLabelValues(e.Name, "error").Inc()
		return err
	}
	metrics.UsageRefreshes.WithLabelValues(e.Name, "ok").Inc()
	rows := make([]metrics.UsageRow, 0, len(targets))
	var errs []error
	for i, t := range targets {
		b := t.buckety
		if usages != nil && usages[i].Known {
			var err error
			if b, err = u.record(ctx, b, usages[i]); err != nil {
				errs = append(errs, err)
			}
		}
		fp := budget.Footprint(e.Config, budget.EffectiveParameters(e.Config, b))
		rows = append(rows, usageRow(b, fp))
		if quotaChanged(b, &fp) {
			if err := u.Wakes.QuotaWarningChanged(ctx, b); err != nil {
				return err
			}
		}
	}
	metrics.SetUsage(e.Name, rows)
	if len(errs) > 0 {
		return fmt.Errorf("%d Bucketies, first: %w", len(errs), errs[0])
	}
	return nil
}

// measure asks the backend for the usage of every target; nil when it
// cannot tell any.
func (u *UsageRefresher) measure(ctx context.Context, e *backends.Entry, targets []sweepTarget) ([]drivers.Usage, error) {
	if e.Usage == nil || len(targets) == 0 {
		return nil, nil
	}
	rs := make([]drivers.Resource, len(targets))
	for i, t := range targets {
		rs[i] = t.resource
	}
	usages, err := e.Usage.Usage(ctx, rs)
	if err == nil && len(usages) != len(rs) {
		err = fmt.Errorf("driver %s returned %d usages for %d resources", e.Driver.Name(), len(usages), len(rs))
	}
	if err != nil {
		return nil, fmt.Errorf("measure the usage of %d resources: %w", len(rs), err)
	}
	return usages, nil
}

// record writes b's status.usage when a figure changed, or when the one
// it has is older than UsageRewrite. It returns b as the rest of the
// refresh judges it: a copy with the new status.usage (written or not),
// or b itself when nothing was to be written. b may be the cached object
// itself (RefreshOnce lists without copies), so it is never changed: the
// patch is built on, and its answer decoded into, the copy.
func (u *UsageRefresher) record(ctx context.Context, b *v1.Buckety, m drivers.Usage) (*v1.Buckety, error) {
	next := apiUsage(m)
	cur := b.Status.Usage
	if cur != nil && sameFigures(cur, next) && next.MeasuredAt.Sub(cur.MeasuredAt.Time) < UsageRewrite {
		return b, nil
	}
	orig := b
	b = b.DeepCopy()
	b.Status.Usage = next
	if err := u.Client.Status().Patch(ctx, b, ctrl.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return b, fmt.Errorf("write status.usage of Buckety %s/%s: %w", b.Namespace, b.Name, err)
	}
	return b, nil
}

// apiUsage is a driver's measurement as status.usage shows it.
func apiUsage(m drivers.Usage) *v1.Usage {
	at := m.MeasuredAt
	if at.IsZero() {
		at = time.Now()
	}
	out := &v1.Usage{Bytes: m.Bytes, MeasuredAt: metav1.NewTime(at.UTC().Truncate(time.Second)), Source: m.Source}
	if m.Partitions > 0 {
		out.Partitions, out.EndOffsets = ptr(m.Partitions), ptr(m.EndOffsets)
	} else {
		out.Objects = ptr(m.Objects)
	}
	return out
}

func ptr(n int64) *int64 { return &n }

// sameFigures compares everything but measuredAt.
func sameFigures(a, b *v1.Usage) bool {
	x, y := *a, *b
	x.MeasuredAt, y.MeasuredAt = metav1.Time{}, metav1.Time{}
	return reflect.DeepEqual(x, y)
}

// usageRow is b's line in the usage metrics.
func usageRow(b *v1.Buckety, fp drivers.Footprint) metrics.UsageRow {
	row := metrics.UsageRow{Namespace: b.Namespace, Buckety: b.Name, HardQuota: max(fp.QuotaBytes, 0), SoftQuota: fp.SoftQuotaBytes}
	if b.Status.Usage != nil {
		row.Known, row.Bytes = true, b.Status.Usage.Bytes
	}
	return row
}

// quotaChanged reports whether the QuotaWarning the reconciler would derive
// now differs from the one b has.
func quotaChanged(b *v1.Buckety, fp *drivers.Footprint) bool {
	want := quotaWarning(b, fp)
	have := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionQuotaWarning)
	return have == nil || have.Status != want.Status || have.Reason != want.Reason
}

// quotaWarning derives QuotaWarning from status.usage and the quotas the
// parameters set (fp; nil when the backend did not resolve). Messages
// carry the quotas, not the usage, so a figure that moves does not rewrite
// the condition: status.usage has it.
func quotaWarning(b *v1.Buckety, fp *drivers.Footprint) status.Cond {
	const t = v1.ConditionQuotaWarning
	if fp == nil {
		return status.Unknown(t, v1.ReasonNotDetermined, "the backend did not resolve")
	}
	hard, soft := max(fp.QuotaBytes, 0), fp.SoftQuotaBytes
	u := b.Status.Usage
	switch {
	case hard == 0 && soft == 0:
		return status.False(t, v1.ReasonBelowQuota, "no quota is set")
	case u == nil:
		return status.False(t, v1.ReasonUsageUnknown, "usage has not been measured yet")
	case hard > 0 && u.Bytes >= hard:
		return status.True(t, v1.ReasonQuotaReached, fmt.Sprintf("usage (status.usage) reached the hard quota of %s: the service refuses writes until data is removed or the quota is raised", drivers.FormatBytes(hard)))
	case soft > 0 && u.Bytes >= soft:
		return status.True(t, v1.ReasonSoftQuotaReached, fmt.Sprintf("usage (status.usage) reached the soft quota of %s%s", drivers.FormatBytes(soft), hardNote(hard)))
	}
	return status.False(t, v1.ReasonBelowQuota, "usage is below the soft quota"+hardNote(hard))
}

func hardNote(hard int64) string {
	if hard == 0 {
		return ""
	}
	return fmt.Sprintf(" (hard quota %s, enforced by the service)", drivers.FormatBytes(hard))
}

// UsageOnly drops a Buckety update that changed nothing but status.usage
// (the refresher's write): the reconciler has nothing to do for it, and
// the refresher enqueues the Bucketies whose QuotaWarning changes.
func UsageOnly() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1.Buckety)
		n, ok2 := e.ObjectNew.(*v1.Buckety)
		if !ok1 || !ok2 || reflect.DeepEqual(o.Status.Usage, n.Status.Usage) {
			return true
		}
		x, y := o.DeepCopy(), n.DeepCopy()
		x.Status.Usage, y.Status.Usage = nil, nil
		x.ResourceVersion, y.ResourceVersion = "", ""
		x.ManagedFields, y.ManagedFields = nil, nil
		return !reflect.DeepEqual(x, y)
	}}
}

// budgets replaces the backend's budget metrics: per namespace that holds
// claims on it, what it uses of each budget, and the budgets set.
func (u *UsageRefresher) budgets(ctx context.Context, e *backends.Entry, list []v1.Buckety, claimList []v1.BucketyClaim) error {
	var accesses v1.BucketyAccessList
	if err := u.Client.List(ctx, &accesses, ctrl.UnsafeDisableDeepCopy); err != nil { // counted only
		return fmt.Errorf("list BucketyAccesses: %w", err)
	}
	owners := make(map[string]*v1.Buckety, len(list))
	onBackend := map[string]bool{}
	for i := range list {
		b := &list[i]
		owners[string(b.UID)] = b
		if b.Status.Backend == e.Name || (b.Status.Backend == "" && b.Spec.Backend == e.Name) {
			onBackend[b.Namespace+"/"+b.Name] = true
		}
	}
	type use struct {
		claims, accesses int64
		summed           v1.Budgeted
	}
	perNS := map[string]*use{}
	at := func(ns string) *use {
		if perNS[ns] == nil {
			perNS[ns] = &use{}
		}
		return perNS[ns]
	}
	for i := range claimList {
		cl := &claimList[i]
		if cl.Spec.Backend != e.Name {
			continue
		}
		n := at(cl.Spec.Owner.Namespace)
		n.claims++
		switch owner := owners[cl.Spec.Owner.UID]; {
		case cl.Spec.Budgeted != nil:
			n.summed = budget.Add(n.summed, *cl.Spec.Budgeted)
		case owner != nil:
			n.summed = budget.Add(n.summed, budget.Counted(budget.Footprint(e.Config, budget.EffectiveParameters(e.Config, owner))))
		}
	}
	for i := range accesses.Items {
		a := &accesses.Items[i]
		if onBackend[a.BucketyNamespace()+"/"+a.FirstRef().Name] {
			at(a.Namespace).accesses++
		}
	}
	var rows []metrics.BudgetRow
	for ns, n := range perNS {
		// The namespace's own limits (limits.namespaces), so that the
		// budget alert divides by what it may use.
		var l config.Limits
		ne, err := backends.ForNamespace(ctx, u.Client, e, ns)
		if err != nil {
			return err
		}
		if ne.Config.Limits != nil {
			l = *ne.Config.Limits
		}
		rows = append(rows,
			metrics.BudgetRow{Namespace: ns, Budget: "bucketies", Used: n.claims, Limit: int64(l.PerNamespace)},
			metrics.BudgetRow{Namespace: ns, Budget: "accesses", Used: n.accesses, Limit: int64(l.AccessesPerNamespace)},
			metrics.BudgetRow{Namespace: ns, Budget: "partitions", Used: n.summed.Partitions, Limit: l.Partitions},
			metrics.BudgetRow{Namespace: ns, Budget: "diskBytes", Used: n.summed.DiskBytes, Limit: l.DiskBytes.Bytes},
			metrics.BudgetRow{Namespace: ns, Budget: "quotaBytes", Used: n.summed.QuotaBytes, Limit: l.QuotaBytes.Bytes})
	}
	metrics.SetBudgets(e.Name, rows)
	return nil
}
