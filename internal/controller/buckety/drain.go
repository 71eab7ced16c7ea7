package buckety

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/testhook"
)

// Drain (spec.drain). A drain is a sequence of passes of the ordinary
// reconcile, each making at most one bounded drivers.Drainer step, so a
// bucket of a million objects never holds a worker. Everything a drain
// needs to continue is in status.drain and the resource itself: a
// controller that crashed mid-drain continues from what the next pass
// finds.
//
//   - drainRequest (before anything is asked of the backend) matches
//     status.drain to spec.drain: a new request starts a drain (one
//     present when the Buckety was created is refused, so a Buckety
//     re-applied from Git or restored from a backup does not empty its
//     resource again); a removed or replaced request, or a status that
//     no spec asks for, cancels it.
//   - drainPass (once the resource is provisioned, so buckety holds it:
//     its claim Created or Adopted, no other owner, not handed over)
//     checks the rules that may have changed since admission (the
//     backend's drain.allow, the driver), and makes one step when the
//     interval allows: at once after a step that deleted something, else
//     after the interval (the slow interval once the drain is an hour
//     old).
//
// The Draining condition (status.go's draining) is derived from
// status.drain and the time of the pass: DrainStuck once nothing was
// deleted for stuckAfter.

// drainSlowAfter is how long a drain runs before it waits its slow
// interval instead of its interval, as StorageGrid's drain polls less
// often after its first hour.
const drainSlowAfter = time.Hour

// drainTerms are the pace of a drain: each the Buckety's spec.drain, else
// the backend's drain block, else the default.
type drainTerms struct {
	// interval is the wait after a pass that deleted nothing in the
	// drain's first hour, slowInterval after it.
	interval, slowInterval time.Duration
	stuckAfter             time.Duration
}

// termsOf is the pace of b's drain on backend be (nil: the config does not
// know the backend; the defaults). A slowInterval set by neither is
// config.DefaultDrainSlowFactor times the interval; one shorter than the
// interval (each valid where it was set, but from different places) is
// the interval.
func termsOf(b *v1.Buckety, be *config.Backend) drainTerms {
	t := drainTerms{interval: config.DefaultDrainInterval, stuckAfter: config.DefaultDrainStuckAfter}
	if be != nil {
		t = drainTerms{interval: be.DrainInterval(), slowInterval: be.DrainSlowInterval(), stuckAfter: be.DrainStuckAfter()}
	}
	if d := b.Spec.Drain; d != nil {
		if d.Interval != nil && d.Interval.Duration >= config.MinDrainInterval {
			t.interval = d.Interval.Duration
		}
		if d.SlowInterval != nil && d.SlowInterval.Duration > 0 {
			t.slowInterval = d.SlowInterval.Duration
		}
		if d.StuckAfter != nil && d.StuckAfter.Duration > 0 {
			t.stuckAfter = d.StuckAfter.Duration
		}
	}
	if t.slowInterval == 0 {
		t.slowInterval = config.DefaultDrainSlowFactor * t.interval
	}
	t.slowInterval = max(t.slowInterval, t.interval)
	return t
}

// ValidateDrainSpec returns what is wrong with spec.drain's durations, ""
// when nothing; admission and the controller share it.
func ValidateDrainSpec(d *v1.DrainSpec) string {
	if d == nil {
		return ""
	}
	if d.Interval != nil && d.Interval.Duration < config.MinDrainInterval {
		return fmt.Sprintf("spec.drain.interval %s: must be at least %s", d.Interval.Duration, config.MinDrainInterval)
	}
	if d.SlowInterval != nil {
		// The interval it slows from is checked where spec.drain sets
		// both; the backend's may change after admission (termsOf then
		// keeps the slow interval no shorter than the interval).
		var iv time.Duration
		if d.Interval != nil {
			iv = d.Interval.Duration
		}
		if msg := config.SlowIntervalProblem(d.SlowInterval.Duration, iv, "spec.drain.interval"); msg != "" {
			return fmt.Sprintf("spec.drain.slowInterval %s: %s", d.SlowInterval.Duration, msg)
		}
	}
	if d.StuckAfter != nil && d.StuckAfter.Duration <= 0 {
		return fmt.Sprintf("spec.drain.stuckAfter %s: must be positive", d.StuckAfter.Duration)
	}
	return ""
}

// drainEvent is an event a drain transition records.
type drainEvent struct {
	typ, reason, note string
}

// drainTransition is what drainRequest decided.
type drainTransition struct {
	// events to record, in order.
	events []drainEvent
}

// drainRequest matches status.drain to spec.drain at now, changing
// status.drain: it cancels a drain no spec.drain asks for any more, and
// starts (or, for a Buckety created with the request or not yet
// provisioned by this cluster, refuses) a drain for a request
// status.drain does not record. It asks nothing of the
// backend.
func drainRequest(b *v1.Buckety, now time.Time) drainTransition {
	var tr drainTransition
	spec, st := b.Spec.Drain, b.Status.Drain
	t := metav1.NewTime(now.UTC().Truncate(time.Second))
	if st != nil && st.Phase == v1.DrainPhaseDraining && (spec == nil || spec.Request != st.Request) {
		why := fmt.Sprintf("spec.drain.request changed to %q", requestOf(spec))
		if spec == nil {
			why = "no spec.drain asks for it"
		}
		st.Phase, st.CompletionTime = v1.DrainPhaseCancelled, &t
		st.Message = fmt.Sprintf("cancelled: %s; nothing more is deleted", why)
		tr.events = append(tr.events, drainEvent{corev1.EventTypeNormal, v1.EventDrainCancelled,
			fmt.Sprintf("drain %q cancelled (%s) after deleting %s", st.Request, why, contentWords(b, st.Deleted))})
	}
	if st != nil && st.Phase == v1.DrainPhaseDraining && restoredDrain(b, st) {
		// A status restored from a backup taken mid-drain, onto a new
		// object: the drain it records ended long ago, or never will on
		// this resource, and resuming it would empty what was written
		// since the backup.
		refuse(st, t, fmt.Sprintf("status.drain was restored from a backup (it names Buckety UID %q, this one is %q): a restored drain is not resumed, so nothing written since the backup is emptied; set a new spec.drain.request to drain it", st.UID, b.UID))
		if st.UID == "" {
			st.Message = "status.drain was restored from a backup (it records a drain in progress on a Buckety created with that request): a restored drain is not resumed, so nothing written since the backup is emptied; set a new spec.drain.request to drain it"
		}
		tr.events = append(tr.events, drainEvent{corev1.EventTypeWarning, v1.EventDrainRefused, st.Message})
		return tr
	}
	if spec == nil || (st != nil && st.Request == spec.Request) {
		return tr
	}
	next := &v1.DrainStatus{Request: spec.Request, Phase: v1.DrainPhaseDraining, UID: b.UID, StartTime: &t, LastProgressTime: &t, Earlier: earlierDrains(st)}
	b.Status.Drain = next
	switch {
	case slices.Contains(next.Earlier, spec.Request):
		// A revert in Git of the commit that asked for the next drain
		// brings an earlier request back: it drained once, and does
		// not empty the resource again (with what was written since).
		refuse(next, t, fmt.Sprintf("spec.drain.request %q was handled before (status.drain.earlier): a request drains once, so setting an earlier one again (a revert in Git) does not empty the resource again; set a new value to drain it", spec.Request))
	case b.Generation <= 1:
		refuse(next, t, "spec.drain.request was set when this Buckety was created, so a Buckety re-applied from Git or restored from a backup does not empty its resource again; change spec.drain.request to drain it")
	case b.Status.Provenance == "":
		// Edited before this cluster ever provisioned it: on a cluster
		// rebuilt from Git whose controller came after two commits, the
		// first pass sees generation 2 and a resource re-attached with
		// its data.
		refuse(next, t, "spec.drain.request was set before this cluster provisioned the Buckety (status.provenance is empty), so a Buckety re-applied from Git or restored from a backup does not empty its resource again; change spec.drain.request once it is provisioned to drain it")
	}
	if next.Phase == v1.DrainPhaseRefused {
		tr.events = append(tr.events, drainEvent{corev1.EventTypeWarning, v1.EventDrainRefused, next.Message})
		return tr
	}
	tr.events = append(tr.events, drainEvent{corev1.EventTypeNormal, v1.EventDrainStarted,
		fmt.Sprintf("drain %q started: the resource is emptied and kept; status.drain reports the progress", spec.Request)})
	return tr
}

// restoredDrain reports whether status.drain st, Draining, was not
// started on Buckety b but restored onto it: it names another object's
// UID, or (recorded before status.drain.uid) b is at its first generation,
// where a drain never starts.
func restoredDrain(b *v1.Buckety, st *v1.DrainStatus) bool {
	if st.UID != "" {
		return st.UID != b.UID
	}
	return b.Generation <= 1
}

// earlierDrains are the requests handled before the one after st: st's
// earlier ones and its own, the oldest dropped past v1.MaxEarlierDrains.
func earlierDrains(st *v1.DrainStatus) []string {
	if st == nil {
		return nil
	}
	out := append(slices.Clone(st.Earlier), st.Request)
	if i := slices.Index(out[:len(out)-1], st.Request); i >= 0 {
		out = slices.Delete(out, i, i+1) // once, at its latest place
	}
	if n := len(out) - v1.MaxEarlierDrains; n > 0 {
		out = out[n:]
	}
	return out
}

// drainPhase is b's status.drain's request and phase, "" without one.
func drainPhase(b *v1.Buckety) string {
	if b.Status.Drain == nil {
		return ""
	}
	return b.Status.Drain.Request + "/" + string(b.Status.Drain.Phase)
}

func requestOf(d *v1.DrainSpec) string {
	if d == nil {
		return ""
	}
	return d.Request
}

// refuse ends st as Refused with msg.
func refuse(st *v1.DrainStatus, t metav1.Time, msg string) {
	st.Phase, st.CompletionTime, st.Message = v1.DrainPhaseRefused, &t, msg
}

// drainRules says why a drain of b on e may not run now, "" when it may:
// the backend's drain.allow, a driver that cannot drain, spec.drain's
// durations, and whether buckety holds the resource.
func drainRules(b *v1.Buckety, e *backends.Entry, f *facts) string {
	switch {
	case f.ownedElsewhere != "":
		return "the resource is not this Buckety's to drain: " + f.ownedElsewhere
	case f.recordGone != "":
		return "the resource is not this Buckety's to drain: " + f.recordGone
	case f.handedOver != "":
		return "the resource is handed over to another installation: " + f.handedOver
	}
	if msg := e.Config.DrainRefusal(); msg != "" {
		return msg
	}
	if e.Drainer == nil {
		return fmt.Sprintf("spec.drain is not supported on backend %q: its driver %s cannot empty a resource", e.Name, e.Driver.Name())
	}
	if msg := ValidateDrainSpec(b.Spec.Drain); msg != "" {
		return msg
	}
	if !f.provisioned || f.claim == nil || (f.claim.Spec.Phase != v1.ClaimCreated && f.claim.Spec.Phase != v1.ClaimAdopted) || b.Status.Provenance == "" {
		return "wait"
	}
	return ""
}

// drainWait is how long the next step of st waits at now: nothing after a
// step that deleted something (or before the first), the interval after
// one that did not (the slow interval after drainSlowAfter).
func drainWait(st *v1.DrainStatus, terms drainTerms, now time.Time) time.Duration {
	if st.LastPassTime == nil {
		return 0
	}
	if st.LastProgressTime != nil && st.LastProgressTime.Equal(st.LastPassTime) && st.Deleted.Objects != nil && *st.Deleted.Objects > 0 {
		// After a step that removed something, the next comes in the
		// next second of the last pass's (its times are whole seconds): a
		// topic a producer keeps writing has something to remove at every
		// step, and steps at once ran as fast as a status write returns,
		// for as long as the producer wrote.
		return max(0, st.LastPassTime.Add(drainProgressGap).Sub(now))
	}
	iv := terms.interval
	if st.StartTime != nil && now.Sub(st.StartTime.Time) >= drainSlowAfter {
		iv = terms.slowInterval
	}
	return max(0, st.LastPassTime.Add(iv).Sub(now))
}

// drainProgressGap is the least time between the passes of a drain that
// is removing content.
const drainProgressGap = time.Second

// drainPass ends a drain whose rules no longer hold, or makes one step of
// it when its interval allows. It returns how long until the next pass
// should come (0: no drain runs).
func (r *Reconciler) drainPass(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) time.Duration {
	st := b.Status.Drain
	if st == nil || st.Phase != v1.DrainPhaseDraining {
		return 0
	}
	now := f.now
	t := metav1.NewTime(now.UTC().Truncate(time.Second))
	terms := termsOf(b, e.Config)
	switch msg := drainRules(b, e, f); msg {
	case "":
	case "wait":
		// The resource is not provisioned in this pass (unreachable, a
		// claim in progress): the drain waits, and reports DrainStuck if
		// that lasts.
		return terms.interval
	default:
		refuse(st, t, "stopped: "+msg)
		r.flushDrainEvents(b, f)
		r.event(b, corev1.EventTypeWarning, v1.EventDrainRefused, v1.EventActionDrain, fmt.Sprintf("drain %q %s, after deleting %s", st.Request, st.Message, contentWords(b, st.Deleted)))
		return 0
	}
	if w := drainWait(st, terms, now); w > 0 {
		return w
	}
	res := backendResource(e, f.resourceName, paramsOf(f, b), nil)
	// The owner record, read fresh before each step as before a deletion:
	// the pass's owner check may have trusted what this process
	// remembered, and another installation may have taken the resource
	// over since (a topic deleted out of band and created again by it).
	switch why, gone, err := r.deletableByRecord(ctx, b, e, f.claim, res); {
	case err != nil:
		f.Record(err)
		return terms.interval
	case why != "":
		if gone {
			why += ": " + goneHint(f.claim.Name)
		}
		refuse(st, t, "stopped: the resource is not this Buckety's to drain: "+why)
		r.flushDrainEvents(b, f)
		r.event(b, corev1.EventTypeWarning, v1.EventDrainRefused, v1.EventActionDrain, fmt.Sprintf("drain %q %s, after deleting %s", st.Request, st.Message, contentWords(b, st.Deleted)))
		return 0
	}
	// The server's status.drain, read fresh before each step: a pass
	// whose status write that ended this drain was committed but whose
	// reply was lost (the API server stopped mid-request) is followed by
	// one whose cache may not show that write yet: it would see the drain
	// still running, or not begun, and empty the resource again, with
	// what its tenant wrote once it read Drained.
	switch ended, gone, calledOff, err := r.drainEnded(ctx, b, st.Request); {
	case err != nil:
		f.claimErr = err
		return terms.interval
	case gone:
		// Deleted, or deleted and made again under its name (which may
		// re-attach the same resource): nothing of this drain runs on.
		return 0
	case calledOff:
		// The server's spec no longer asks for this drain (removed or
		// changed, or the Buckety is being deleted) but this pass's cache
		// does not show it yet: no step, which would delete what the
		// tenant wrote after the cancel. The pass the update brings
		// records the cancel; this one comes back in case it does not.
		return drainProgressGap
	case ended != nil:
		// What this pass's stale cache started is not news: no event.
		b.Status.Drain = ended
		f.drainEvents = nil
		return 0
	}
	if st.Passes == 0 && st.Initial == nil && e.Usage != nil {
		st.Initial = initialFromUsage(ctx, e, res, st.StartTime.Time)
	}
	limits := drivers.DrainLimits{Units: r.DrainUnits, Stop: r.drainCalledOff(ctx, b, st.Request)}
	if st.Passes == 0 {
		// The first step also counts what it leaves, so that
		// status.drain.initial and current are exact from the start for
		// buckets of up to countAhead entries more than a step deletes.
		limits.CountAhead = countAhead
	}
	r.flushDrainEvents(b, f)
	step, err := e.Drainer.Drain(ctx, res, limits)
	testhook.Pause(ctx, testhook.AfterDrainStep)
	applyStep(e.Name, st, step, err, t)
	if st.Phase == v1.DrainPhaseDrained {
		r.event(b, corev1.EventTypeNormal, v1.EventDrainCompleted, v1.EventActionDrain, fmt.Sprintf("drain %q completed: deleted %s in %s (%d passes, %d requests)",
			st.Request, contentWords(b, st.Deleted), st.CompletionTime.Sub(st.StartTime.Time).Round(time.Second), st.Passes, st.Requests))
		return 0
	}
	if w := drainWait(st, terms, now); w > 0 {
		return w
	}
	// Progress: the next step at once, but through the queue, so other
	// Bucketies' passes are not starved.
	return 10 * time.Millisecond
}

// drainEnded reads Buckety b from the API server and returns its
// status.drain when it records request as no longer Draining (Drained,
// Cancelled or Refused, or handled before a newer request), nil when it
// does not (still Draining, or not recorded yet: this pass starts it).
// gone is true when b is no longer there (deleted, or replaced by another
// Buckety of its name); calledOff when the server's b no longer asks for
// request (spec.drain removed or changed) or is being deleted, which this
// pass's cache may not show yet.
func (r *Reconciler) drainEnded(ctx context.Context, b *v1.Buckety, request string) (ended *v1.DrainStatus, gone, calledOff bool, err error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	cur := &v1.Buckety{}
	if err := reader.Get(ctx, ctrl.ObjectKeyFromObject(b), cur); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, true, false, nil
		}
		return nil, false, false, fmt.Errorf("read Buckety %s/%s before a drain step: %w", b.Namespace, b.Name, err)
	}
	d := cur.Status.Drain
	switch {
	case cur.UID != b.UID:
		return nil, true, false, nil
	case d != nil && (d.Request == request && d.Phase != v1.DrainPhaseDraining || d.Request != request && slices.Contains(d.Earlier, request)):
		return d.DeepCopy(), false, false, nil
	case !cur.DeletionTimestamp.IsZero() || requestOf(cur.Spec.Drain) != request:
		return nil, false, true, nil
	}
	return nil, false, false, nil
}

// drainCalledOff is the drain step's DrainLimits.Stop: true once the
// cache shows Buckety b no longer asking for drain request (spec.drain
// removed or changed), or b gone or being deleted, or cannot tell (the
// next pass goes on, if it should). A step of many
// batches then ends within one, and deletes nothing its tenant writes
// after the cancel; the next pass records the cancel. One cached read per
// batch of up to 1,000 entries.
func (r *Reconciler) drainCalledOff(ctx context.Context, b *v1.Buckety, request string) func() bool {
	key := ctrl.ObjectKeyFromObject(b)
	return func() bool {
		cur := &v1.Buckety{}
		if err := r.Client.Get(ctx, key, cur, ctrl.UnsafeDisableDeepCopy); err != nil {
			return true
		}
		return cur.UID != b.UID || !cur.DeletionTimestamp.IsZero() || requestOf(cur.Spec.Drain) != request
	}
}

// countAhead is the most entries a drain's first step lists, beyond what
// it deletes, to tell what the resource holds: 100 listings of 1,000, once
// per drain.
const countAhead = 100_000

// paramsOf is the parameters Ensure used in this pass.
func paramsOf(f *facts, b *v1.Buckety) map[string]string {
	if f.params != nil {
		return f.params
	}
	return b.Spec.Parameters
}

// initialFromUsage is what the backend's usage report says the resource
// holds before the first step; nil when it cannot tell, or when the
// report was measured before the drain started (MinIO reports from its
// periodic scan, which may predate the content a drain is asked to
// remove). A topic's usage has bytes but no record count: the first step
// supplies it.
func initialFromUsage(ctx context.Context, e *backends.Entry, res drivers.Resource, start time.Time) *v1.DrainContent {
	us, err := e.Usage.Usage(ctx, []drivers.Resource{res})
	if err != nil || len(us) != 1 || !us[0].Known {
		return nil
	}
	u := us[0]
	if u.MeasuredAt.Before(start) {
		return nil
	}
	c := &v1.DrainContent{Bytes: ptr(u.Bytes)}
	if u.Partitions == 0 {
		c.Objects = ptr(u.Objects)
	}
	return c
}

// applyStep records one Drain step (or its failure) in st at t.
func applyStep(backend string, st *v1.DrainStatus, step drivers.DrainStep, err error, t metav1.Time) {
	st.Passes++
	st.Requests += int64(step.Requests)
	st.LastPassTime = &t
	deleted := step.Deleted.Objects
	if deleted > 0 {
		add(&st.Deleted.Objects, deleted)
		st.LastProgressTime = &t
		metrics.DrainedObjects.WithLabelValues(backend).Add(float64(deleted))
	} else if st.Deleted.Objects == nil {
		st.Deleted.Objects = ptr(0)
	}
	if step.Deleted.Bytes > 0 || st.Deleted.Bytes != nil {
		add(&st.Deleted.Bytes, step.Deleted.Bytes)
	}
	if err != nil {
		st.Message = "the last pass failed, retrying: " + err.Error()
		metrics.DrainPasses.WithLabelValues(backend, "error").Inc()
		return
	}
	st.Message = ""
	if !step.Remaining.Known && st.Initial != nil && st.Initial.Objects != nil {
		// What the start held, less what the drain removed: content
		// written meanwhile is not in it, and the step that lists to the
		// end corrects it.
		st.Current = remainder(st.Initial, st.Deleted)
	}
	if step.Remaining.Known {
		st.Current = content(step.Remaining, st.Initial)
		if st.Passes == 1 {
			first := &v1.DrainContent{Objects: ptr(deleted + step.Remaining.Objects)}
			switch {
			case st.Initial != nil && st.Initial.Bytes != nil:
				first.Bytes = st.Initial.Bytes
			case step.Deleted.Bytes > 0 || step.Remaining.Bytes > 0:
				// A bucket's listing tells sizes; a topic's offsets do not.
				first.Bytes = ptr(step.Deleted.Bytes + step.Remaining.Bytes)
			}
			if st.Initial == nil || st.Initial.Objects == nil {
				st.Initial = first
			}
		}
	}
	switch {
	case step.Done:
		st.Phase, st.CompletionTime = v1.DrainPhaseDrained, &t
		st.Current = &v1.DrainContent{Objects: ptr(0)}
		if st.Initial != nil && st.Initial.Bytes != nil || st.Deleted.Bytes != nil {
			st.Current.Bytes = ptr(0)
		}
		if st.Initial == nil {
			// Nothing told it at the start: what was deleted is the best
			// figure (content written meanwhile included).
			c := st.Deleted
			st.Initial = &c
		}
		metrics.DrainPasses.WithLabelValues(backend, "done").Inc()
	case deleted > 0:
		metrics.DrainPasses.WithLabelValues(backend, "progress").Inc()
	default:
		metrics.DrainPasses.WithLabelValues(backend, "idle").Inc()
	}
}

// content is a driver's figures as status shows them. A driver's Bytes is
// 0 where the step did not measure them (a topic's records carry no size),
// so bytes are shown only where they are known: a non-zero figure, or an
// empty resource (which holds no bytes) of a drain whose bytes were known
// at the start. A count nobody measured is absent, never 0.
func content(c drivers.Content, initial *v1.DrainContent) *v1.DrainContent {
	out := &v1.DrainContent{Objects: ptr(c.Objects)}
	if c.Bytes > 0 || (c.Objects == 0 && initial != nil && initial.Bytes != nil) {
		out.Bytes = ptr(c.Bytes)
	}
	return out
}

// remainder is initial less deleted, never below zero; bytes only where
// both are known.
func remainder(initial *v1.DrainContent, deleted v1.DrainContent) *v1.DrainContent {
	less := func(a, b *int64) *int64 {
		if a == nil || b == nil {
			return nil
		}
		return ptr(max(*a-*b, 0))
	}
	return &v1.DrainContent{Objects: less(initial.Objects, ptr(valueOf(deleted.Objects))), Bytes: less(initial.Bytes, deleted.Bytes)}
}

// valueOf is *p, or 0 for nil.
func valueOf(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func add(p **int64, n int64) {
	if *p == nil {
		*p = ptr(0)
	}
	**p += n
}

// unitWord is what a resource of b's driver holds: records on a topic,
// objects in a bucket.
func unitWord(b *v1.Buckety) string {
	if b.Status.Driver == "kadm" {
		return "records"
	}
	return "objects"
}

// contentWords tells c in words: "5000 objects (12 MiB)".
func contentWords(b *v1.Buckety, c v1.DrainContent) string {
	n := int64(0)
	if c.Objects != nil {
		n = *c.Objects
	}
	s := fmt.Sprintf("%d %s", n, unitWord(b))
	if c.Bytes != nil {
		s += fmt.Sprintf(" (%s)", drivers.FormatBytes(*c.Bytes))
	}
	return s
}

// drainActive reports whether b's status records a drain in progress.
func drainActive(b *v1.Buckety) bool {
	return b.Status.Drain != nil && b.Status.Drain.Phase == v1.DrainPhaseDraining
}

// now is the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// flushDrainEvents records what drainRequest decided this pass
// (f.drainEvents), once: after the status write that holds it, or before
// the drain acts on it in the same pass (a step, or its refusal), so a
// step's events come after its start's.
func (r *Reconciler) flushDrainEvents(b *v1.Buckety, f *facts) {
	for _, ev := range f.drainEvents {
		r.event(b, ev.typ, ev.reason, v1.EventActionDrain, ev.note)
	}
	f.drainEvents = nil
}
