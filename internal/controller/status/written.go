package status

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// Written remembers, per object, the resourceVersion of this controller's
// own last write to it, until the cache has caught up with that write.
//
// A write to an object enqueues it again (the watch sees the write); a
// write made early in a reconcile (the finalizer) enqueues it while the
// reconcile still runs, so the next one starts the moment this one ends,
// often before the cache holds the status this one just patched. That
// reconcile would decide from the old status: repeat a status patch, an
// event, or a step the finished one already took. It is skipped instead,
// without a write or a backend call (Stale): the watch event of the newer
// write enqueues the object again, and by then the cache holds it.
//
// The watch events that bring back only this controller's own writes
// (its status, its finalizer) are dropped, unless a skipped reconcile
// waits for them (Echoes): such an event tells the controller nothing it
// did not know when it wrote, and its reconcile would read, compare and
// find nothing to do. An event is this controller's own only if its
// resourceVersion is one this controller's writes were answered with; any
// other write, whatever it changes, and a write that changes more than
// status and this controller's finalizer, is never dropped. An event that
// comes while a write is under way (it can beat the answer) is held back
// until the answer says whether it was the write's: if not, the pass runs
// again (Rerun).
//
// An entry lives until the cache shows the write and its event came: until
// a newer version's event, a reconcile that reads a newer version, or
// echoKeep after the event (unseenKeep after the write, if no event was
// dropped for it). So the map holds the objects written in the last
// moments, not every object.
type Written struct {
	mu    sync.Mutex
	rv    map[types.NamespacedName]*written
	swept time.Time
	now   func() time.Time // nil: time.Now
}

// written is what is remembered of one object.
type written struct {
	// rv is the version of this controller's last write; own, the
	// versions of its last few writes, rv among them.
	rv  string
	own []string
	// waiting: a reconcile found the cache behind rv and was skipped; the
	// write's watch event must enqueue the object.
	waiting bool
	// seen is when the watch event of rv was dropped (the cache holds rv
	// from then on); zero until then.
	seen time.Time
	// at is when rv was recorded.
	at time.Time
	// inflight: a write of the object is under way (Write), from base,
	// the version the writer held; dropped holds the versions whose
	// events came meanwhile and were dropped, up to maxDropped, then
	// overflow.
	inflight bool
	base     string
	dropped  []string
	overflow bool
	// rerun: an event dropped during a write was not this controller's;
	// the pass must run again (Rerun).
	rerun bool
}

// maxOwn is how many of its own writes' versions an entry keeps (a pass
// writes the finalizer and the status: two); maxDropped, how many
// versions dropped during one write it keeps (more ask for a rerun).
const (
	maxOwn     = 4
	maxDropped = 8
)

func (e *written) isOwn(rv string) bool { return rv != "" && slices.Contains(e.own, rv) }

// echoKeep is how long an entry is kept after its watch event came, for
// a reconcile that read the cache just before the event's update of it
// (Stale); unseenKeep, how long one whose event never came (it passed
// before the write was recorded, or a relist folded it into another) is
// kept. sweepEvery paces the removal of older ones.
const (
	echoKeep   = 10 * time.Second
	unseenKeep = time.Minute
	sweepEvery = 10 * time.Second
)

// RaceRetry is how soon a reconcile skipped by Stale runs again when the
// watch event it would wait for already came and was dropped.
const RaceRetry = 10 * time.Millisecond

func (w *Written) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// Record notes obj's resourceVersion after this reconcile's writes, when
// they changed it from before, and ends a write under way (Write). Each
// write is recorded as soon as it returns, so that its watch event, which
// can come before the reconcile ends, finds it.
func (w *Written) Record(obj client.Object, before string) {
	if w == nil {
		return
	}
	key := client.ObjectKeyFromObject(obj)
	rv := obj.GetResourceVersion()
	wrote := rv != before && rv != ""
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock()
	e := w.rv[key]
	if e == nil {
		if !wrote {
			return
		}
		if w.rv == nil {
			w.rv = map[types.NamespacedName]*written{}
		}
		e = &written{}
		w.rv[key] = e
	}
	var dropped []string
	base := ""
	if e.inflight {
		e.inflight = false
		dropped, e.dropped, base = e.dropped, nil, e.base
		if e.overflow {
			e.overflow, e.rerun = false, true
		}
	}
	if wrote && e.rv != rv {
		e.rv, e.at, e.seen, e.waiting = rv, now, time.Time{}, false
		if !e.isOwn(rv) {
			e.own = append(e.own, rv)
			if len(e.own) > maxOwn {
				e.own = slices.Delete(e.own, 0, len(e.own)-maxOwn)
			}
		}
	}
	for _, d := range dropped {
		switch {
		case d == e.rv:
			e.seen = now
		case e.isOwn(d) || notNewer(d, base):
			// This controller's, or no newer than what the writer held.
		default:
			// Someone else's change, which the pass has not seen.
			e.rerun = true
		}
	}
	if e.rv == "" && !e.rerun {
		delete(w.rv, key) // a write that wrote nothing, on an entry made for it
		return
	}
	if wrote && now.Sub(w.swept) >= sweepEvery {
		w.swept = now
		for k, o := range w.rv {
			if !o.inflight && !o.rerun && ((!o.seen.IsZero() && now.Sub(o.seen) >= echoKeep) || now.Sub(o.at) >= unseenKeep) {
				delete(w.rv, k)
			}
		}
	}
}

// Write runs write, a write of obj that updates obj from the answer, as
// this controller's own: from the request until the answer, the watch
// events of obj that change no more than its own writes do are dropped
// (they can come before the answer), and after it the write is recorded.
// An event so dropped that was not of a version this controller wrote
// makes Rerun true.
func (w *Written) Write(obj client.Object, write func() error) error {
	if w == nil {
		return write()
	}
	before := obj.GetResourceVersion()
	key := client.ObjectKeyFromObject(obj)
	w.mu.Lock()
	if w.rv == nil {
		w.rv = map[types.NamespacedName]*written{}
	}
	e := w.rv[key]
	if e == nil {
		e = &written{at: w.clock()}
		w.rv[key] = e
	}
	e.inflight, e.base, e.dropped, e.overflow = true, before, nil, false
	w.mu.Unlock()
	err := write()
	w.Record(obj, before)
	return err
}

// AddFinalizer is objects.AddFinalizer as this controller's own write
// (Write), when it has anything to write.
func (w *Written) AddFinalizer(ctx context.Context, c client.Client, obj client.Object, slot string) error {
	if objects.FinalizerSet(obj, slot) {
		return nil
	}
	return w.Write(obj, func() error { return objects.AddFinalizer(ctx, c, obj, slot) })
}

// notNewer reports whether version a is known to be no newer than b.
func notNewer(a, b string) bool {
	cmp, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && cmp <= 0
}

// Rerun reports, once, whether a write of obj (Write) dropped an event
// that was not its own: the reconcile must run again.
func (w *Written) Rerun(obj client.Object) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.rv[client.ObjectKeyFromObject(obj)]
	if e == nil || !e.rerun {
		return false
	}
	e.rerun = false
	if e.rv == "" {
		delete(w.rv, client.ObjectKeyFromObject(obj))
	}
	return true
}

// Stale reports whether cached, as read from the cache, is older than this
// controller's last write to it, and then after: 0 when the write's watch
// event will enqueue the object again, or how soon to run again when that
// event already came (and was dropped, the cache updated just after this
// reconcile read it). Resource versions that are not comparable (an API
// server not backed by etcd) are never stale.
func (w *Written) Stale(cached client.Object) (stale bool, after time.Duration) {
	if w == nil {
		return false, 0
	}
	key := client.ObjectKeyFromObject(cached)
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.rv[key]
	if !ok || e.rv == "" {
		return false, 0
	}
	cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), e.rv)
	switch {
	case err != nil || cmp > 0 || (cmp == 0 && !e.seen.IsZero()):
		delete(w.rv, key)
		return false, 0
	case cmp == 0:
		// The cache holds the write, and its watch event, which comes
		// just after the cache is updated, is still to be dropped: the
		// entry stays for it.
		return false, 0
	}
	if !e.seen.IsZero() {
		delete(w.rv, key)
		return true, RaceRetry
	}
	e.waiting = true
	return true, 0
}

// Echoes reports whether obj, as a watch event brings it, is of a version
// this controller wrote, with no reconcile waiting for it, or comes while
// a write of it is under way (Write, which sorts out whether it was the
// write's): an event that can be dropped. The last write's event marks
// the entry seen.
func (w *Written) Echoes(obj client.Object) bool {
	if w == nil {
		return false
	}
	key := client.ObjectKeyFromObject(obj)
	rv := obj.GetResourceVersion()
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.rv[key]
	if !ok {
		return false
	}
	if e.inflight {
		if len(e.dropped) < maxDropped {
			e.dropped = append(e.dropped, rv)
		} else {
			e.overflow = true
		}
		return true
	}
	if e.rv == "" {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, e.rv)
	switch {
	case err != nil || cmp > 0:
		delete(w.rv, key)
		return false
	case e.waiting:
		if cmp == 0 {
			delete(w.rv, key)
		}
		return false
	case cmp == 0:
		e.seen = w.clock()
		return true
	}
	// Older than the last write: dropped only if it was one of this
	// controller's own.
	return e.isOwn(rv)
}

// Forget drops what is remembered of an object that is gone.
func (w *Written) Forget(key types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}

// DropEchoes is the predicate of a controller's watch of its own kind
// that drops the updates Echoes finds to be its own writes: those that
// change nothing but the status, the resourceVersion and managedFields,
// add finalizer at most and set label at most (the shard slot label, set
// in the finalizer's patch). Every other event passes.
func (w *Written) DropEchoes(finalizer, label string) predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil || !bookkeeping(e.ObjectOld, e.ObjectNew, finalizer, label) {
			return true
		}
		return !w.Echoes(e.ObjectNew)
	}}
}

// bookkeeping reports whether o and n, two versions of one object, differ
// at most in what a status write or a finalizer patch of this controller
// changes: the generation (so the spec), deletion, annotations, owner
// references and the labels but label are equal, and n's finalizers are
// o's, or o's and finalizer.
func bookkeeping(o, n client.Object, finalizer, label string) bool {
	if o.GetUID() != n.GetUID() || o.GetGeneration() != n.GetGeneration() ||
		!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
		!equalBut(o.GetLabels(), n.GetLabels(), label) ||
		!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) {
		return false
	}
	of, nf := o.GetFinalizers(), n.GetFinalizers()
	return slices.Equal(of, nf) || (!slices.Contains(of, finalizer) && slices.Equal(append(slices.Clone(of), finalizer), nf))
}

// equalBut reports whether a and b hold the same entries, but key.
func equalBut(a, b map[string]string, key string) bool {
	n := 0
	for k, v := range a {
		if k == key {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
		n++
	}
	if _, ok := b[key]; ok {
		n++
	}
	return n == len(b)
}
