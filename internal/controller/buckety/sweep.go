package buckety

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/budget"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

// The drift sweep. Re-checking every Buckety with its own Ensure costs
// backend requests per Buckety (two per Kafka topic), however rarely
// anything drifts. A driver that implements drivers.Sweeper judges every
// resource of a backend in a few batched requests instead, and only the
// Bucketies it finds drifted are reconciled. The Sweeper runnable below
// does that once per interval per backend; the per-object re-check of a
// Buckety whose backend sweeps completely (kadm) becomes a long safety net
// (Reconciler.SweptRecheck), while a partial sweep (s3: existence only)
// leaves the ordinary re-check in place.

// Sweeper sweeps every backend whose driver can, once per Interval, and
// sends the Bucketies found drifted to the Buckety controller. It runs
// only on the leader, like the reconcilers.
//
// A sweep that fails as a whole (the backend unreachable) enqueues
// nothing and is tried again at the next interval: an outage is the same
// for every Buckety on the backend, reconciling them all would only
// record it on each, and when the backend is back the next sweep judges
// them all and enqueues only the drifted. Bucketies that fail their own
// reconciles meanwhile retry on their own backoff. A resource the backend
// answered an error about (rather than its state) is not enqueued either;
// the sweep counts it, and its per-object re-check still runs.
type Sweeper struct {
	periodic.LeaderOnly // only the leader sweeps, as only it reconciles
	// Reader lists Bucketies and claims: the manager's cache.
	Reader ctrl.Reader
	// Backends are the open backends; those with a Sweeper are swept.
	Backends *backends.Set
	// Interval is the period of each backend's sweep.
	Interval time.Duration
	// Wakes takes the drifted Bucketies to the Buckety controller
	// (BucketyDrifted).
	Wakes *wake.Channels
	// Log is the logger.
	Log logr.Logger

	// epochs is each backend's registry epoch at its last sweep
	// (drivers.RegistryEpochs), by backend name.
	epochs sync.Map
	// kept is, by backend name, what the sweeps last read of the owner
	// records of the backend's retained resources (*keptRecords), to
	// write them again after a registry loss.
	kept sync.Map
}

// Start implements manager.Runnable: one loop per sweeping backend, until
// ctx ends. The first sweep is at once: the leader reconciles every Buckety
// when it starts, and their Ensure calls answer from what the sweep saw
// (drivers.Resource.MaxAge) instead of reading each resource.
func (s *Sweeper) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, name := range s.Backends.Names() {
		e, ok := s.Backends.Get(name)
		if !ok || e.Sweeper == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			periodic.Every(ctx, s.Interval, func(ctx context.Context) {
				if err := s.SweepOnce(ctx, e); err != nil && ctx.Err() == nil {
					s.Log.Error(err, "drift sweep failed; nothing enqueued, next try in one interval", "backend", e.Name, "interval", s.Interval.String())
				}
			})
		}()
	}
	wg.Wait()
	return nil
}

// SweepOnce sweeps one backend and enqueues the drifted Bucketies.
func (s *Sweeper) SweepOnce(ctx context.Context, e *backends.Entry) error {
	// The sweep only reads the objects (and hands the drifted ones to the
	// queue, which keeps their keys), so it reads the cached objects
	// themselves rather than a copy of every one per interval.
	var list v1.BucketyList
	if err := s.Reader.List(ctx, &list, ctrl.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list Bucketies: %w", err)
	}
	var claims v1.BucketyClaimList
	if err := s.Reader.List(ctx, &claims, ctrl.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list claims: %w", err)
	}
	targets := driftTargets(list.Items, claims.Items, s.Backends, e.Name)
	if err := s.registryRecreated(ctx, e, targets, claims.Items); err != nil {
		return err
	}
	if len(targets) == 0 {
		metrics.DriftSweeps.WithLabelValues(e.Name, "ok").Inc()
		for _, v := range []string{"in_sync", "drifted", "unjudged"} {
			metrics.DriftSweepResources.WithLabelValues(e.Name, v).Set(0)
		}
		return nil
	}
	rs := make([]drivers.Resource, len(targets))
	for i, t := range targets {
		rs[i] = t.resource
	}
	verdicts, err := e.Sweeper.Sweep(ctx, rs)
	if err == nil && len(verdicts) != len(rs) {
		err = fmt.Errorf("driver %s returned %d verdicts for %d resources", e.Driver.Name(), len(verdicts), len(rs))
	}
	if err != nil {
		metrics.DriftSweeps.WithLabelValues(e.Name, "error").Inc()
		return err
	}
	metrics.DriftSweeps.WithLabelValues(e.Name, "ok").Inc()
	var inSync, unjudged int
	var drifted []string
	for i, v := range verdicts {
		b := targets[i].buckety
		enqueue, why := sweepDecision(b, v)
		switch {
		case v.Err != nil:
			unjudged++
			s.Log.V(1).Info("drift sweep could not judge a resource", "backend", e.Name, "buckety", b.Namespace+"/"+b.Name, "resource", rs[i].Name, "error", v.Err.Error())
		case !enqueue:
			inSync++
		}
		if !enqueue {
			continue
		}
		drifted = append(drifted, b.Namespace+"/"+b.Name)
		s.Log.V(1).Info("drift sweep enqueues", "backend", e.Name, "buckety", b.Namespace+"/"+b.Name, "resource", rs[i].Name, "why", why)
		if err := s.Wakes.BucketyDrifted(ctx, b); err != nil {
			return err
		}
		metrics.DriftSweepEnqueued.WithLabelValues(e.Name).Inc()
	}
	metrics.DriftSweepResources.WithLabelValues(e.Name, "in_sync").Set(float64(inSync))
	metrics.DriftSweepResources.WithLabelValues(e.Name, "drifted").Set(float64(len(drifted)))
	metrics.DriftSweepResources.WithLabelValues(e.Name, "unjudged").Set(float64(unjudged))
	if len(drifted) > 0 || unjudged > 0 {
		s.Log.Info("drift sweep", "backend", e.Name, "swept", len(rs), "drifted", len(drifted), "unjudged", unjudged, "enqueued", firstN(drifted, 10))
	}
	return nil
}

// registryRecreated has every Buckety of targets reconciled when e's owner
// registry was found deleted and created again since the last sweep
// (drivers.RegistryEpochs): every record went with it, and each pass
// writes its Buckety's again (the reconciler remembers a record only
// within one epoch). Without it the records came back at each Buckety's
// next periodic pass, hours later where the sweep sees all drift, and
// meanwhile another installation whose tenant holds both adoption keys
// could adopt a resource this one holds. The records of the resources
// retained from deleted Bucketies, which no pass writes, the sweep writes
// again itself (keepRetainedRecords, from claimList). The registry is
// caught up at most once every registryCheckSweeps intervals (a catch-up
// the passes' reads made meanwhile counts), so the check adds about one
// request in five sweeps to the sweep's few; a read that fails is left to
// the passes to report.
func (s *Sweeper) registryRecreated(ctx context.Context, e *backends.Entry, targets []sweepTarget, claimList []v1.BucketyClaim) error {
	re, ok := e.Owners.(drivers.RegistryEpochs)
	if !ok {
		return nil
	}
	if err := re.CatchUpRegistry(ctx, registryCheckSweeps*s.Interval); err != nil {
		s.Log.V(1).Info("drift sweep could not read the owner registry", "backend", e.Name, "error", err.Error())
		return nil
	}
	ep := re.RegistryEpoch()
	prev, seen := s.epochs.Swap(e.Name, ep)
	if seen && prev.(uint64) != ep {
		s.Log.Info("the owner registry was deleted and created again: every Buckety on the backend writes its owner record again", "backend", e.Name, "bucketies", len(targets))
		for _, t := range targets {
			if err := s.Wakes.BucketyDrifted(ctx, t.buckety); err != nil {
				return err
			}
		}
	}
	s.keepRetainedRecords(ctx, e, re, ep, claimList)
	return nil
}

// registryCheckSweeps is how many sweep intervals a catch-up of the owner
// registry serves registryRecreated: at the default 30 s interval, a
// registry deleted is found within five minutes, not at the 6 h re-check.
const registryCheckSweeps = 10

// sweepTarget is one Buckety and the desired state of its resource.
type sweepTarget struct {
	buckety  *v1.Buckety
	resource drivers.Resource
}

// sweepTargets picks the Bucketies on backend whose resource is
// provisioned, with the name and parameters the reconciler would pass to
// Ensure: the name of this Buckety's claim once it has written to the
// backend under it (phase Creating, Created or Adopted), else its
// status.backendResourceName. Bucketies not provisioned yet, being deleted,
// or whose reconciliation is paused (backend left the config, driver
// changed, driver major differs) are left to the reconciler. The result
// is sorted by namespace and name.
func sweepTargets(list []v1.Buckety, claimList []v1.BucketyClaim, set *backends.Set, backend string) []sweepTarget {
	return targetsOf(list, claimList, set, backend, false)
}

// driftTargets are the drift sweep's targets: sweepTargets, and also the
// Bucketies whose status does not record a backend yet but whose claim on
// this backend is settled (Created or Adopted): a Buckety provisioned
// under load, whose status write waits in the queue (or is held for its
// access, Held) for longer than one interval. Their passes then
// find a recent observation of their resource rather than reading it
// again (at 10,000 Bucketies, about 5,000 Kafka requests). The usage
// refresh keeps to sweepTargets: it writes status.usage, and a Buckety
// whose first status write is still to come gets none before it.
func driftTargets(list []v1.Buckety, claimList []v1.BucketyClaim, set *backends.Set, backend string) []sweepTarget {
	return targetsOf(list, claimList, set, backend, true)
}

// targetsOf is sweepTargets, with unrecorded: driftTargets.
func targetsOf(list []v1.Buckety, claimList []v1.BucketyClaim, set *backends.Set, backend string, unrecorded bool) []sweepTarget {
	settled := map[string]*v1.BucketyClaim{}
	for i := range claimList {
		cl := &claimList[i]
		if cl.Spec.Phase != v1.ClaimClaimed && cl.Spec.Backend == backend {
			settled[cl.Spec.Owner.UID] = cl
		}
	}
	var out []sweepTarget
	for i := range list {
		b := &list[i]
		if !b.DeletionTimestamp.IsZero() {
			continue
		}
		_, claimed := settled[string(b.UID)]
		recorded := b.Status.Backend == backend
		if !recorded && !(unrecorded && claimed && b.Status.Backend == "") {
			continue
		}
		e, problem := backends.Resolve(set, b.Spec.Backend, backends.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
		if problem != nil || e.Name != backend {
			continue
		}
		name, params := b.Status.BackendResourceName, budget.EffectiveParameters(e.Config, b)
		var claim *v1.BucketyClaim
		if cl, ok := settled[string(b.UID)]; ok {
			name, claim = cl.Spec.ResourceName, cl
		}
		if name == "" {
			continue
		}
		out = append(out, sweepTarget{buckety: b, resource: backendResource(e, name, params, claim)})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].buckety, out[j].buckety
		return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
	})
	return out
}

// sweepDecision decides from a sweep's verdict whether a Buckety is
// reconciled now: when Ensure would write, and when the drift it reports
// and will not repair is not what the Buckety's ParameterDrift condition
// already says (new, changed or gone). Drift already reported is not
// re-enqueued at every sweep: the reconcile would find the same thing.
func sweepDecision(b *v1.Buckety, v drivers.SweepVerdict) (enqueue bool, why string) {
	if v.Err != nil {
		return false, "not judged: " + v.Err.Error()
	}
	if v.Drifted() {
		return true, strings.Join(v.Changes, "; ")
	}
	c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionParameterDrift)
	reported := c != nil && c.Status == metav1.ConditionTrue
	switch {
	case v.Drift != nil && (!reported || c.Message != v.Drift.Error()):
		return true, "drift not reported yet: " + v.Drift.Error()
	case v.Drift == nil && reported:
		return true, "reported drift is gone"
	}
	return false, ""
}

// recheck is the period of the per-object re-check of a Buckety on e: the
// long safety net SweptRecheck when e's sweep sees every drift Ensure acts
// on, Recheck otherwise.
func (r *Reconciler) recheck(e *backends.Entry) time.Duration {
	if r.SweptRecheck > 0 && e != nil && e.Sweeper != nil && e.Sweeper.SweepCoverage() == drivers.SweepComplete {
		return r.SweptRecheck
	}
	return r.Recheck
}

// maxAge is the drivers.Resource.MaxAge of Ensure on e: ObservedMaxAge
// when e's sweep sees every drift Ensure acts on, else 0 (read every time).
func (r *Reconciler) maxAge(e *backends.Entry) time.Duration {
	if e != nil && e.Sweeper != nil && e.Sweeper.SweepCoverage() == drivers.SweepComplete {
		return r.ObservedMaxAge
	}
	return 0
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// The leader alone runs it (periodic.LeaderOnly).
var _ manager.LeaderElectionRunnable = (*Sweeper)(nil)
