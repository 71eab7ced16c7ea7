package buckety

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

// Held keeps, in this process only, the status a Buckety reconcile
// computed once it provisioned the backend resource for a generation, until
// the cache shows that status recorded.
//
// A Buckety's accesses wait for its resource (the Provisioned condition of
// the generation). Were that status written in the pass that provisioned
// the resource, only to be written again when the accesses are Ready a
// moment later, every Buckety with an access would cost two status writes.
// Instead the provisioning pass puts its status here before it creates or
// wakes any access, and holds the write back while nothing but its
// accesses is left (HoldFor at most); the access reconciler reads the held
// status as if recorded, and the Buckety's next pass (the access turning
// Ready wakes it) writes it once, Ready.
//
// Memory only, and only a fast path: after a restart, or past HoldFor, the
// status is written as before and accesses wait for it. A status a tenant
// wrote cannot get in here: only the Buckety reconciler puts, from what it
// just did. Entries leave once the cache shows a recorded Provisioned
// status for the generation, or the Buckety is gone.
//
// The same bound covers a Buckety whose status is recorded Ready when new
// accesses appear (holdingReady): were its status written at once, every
// new access would turn each Buckety it names Ready=False and, a moment
// later, True again, two status writes per Buckety (256 for an access
// over 128), each waking its accesses. While the only thing that keeps
// such a Buckety from Ready is accesses that are pending and have
// reported no failure, and nothing else in its status would change, its
// status write waits up to For (not SilentFor: the Buckety's Ready is
// already recorded, and says more than a pending access's silence); if
// the accesses turn Ready within it nothing is written at all, Ready
// staying True. An access reporting a failure, For passing, or anything
// else going wrong (drift, shortfalls, an unavailable backend, deletion,
// a drain, a claim error) writes the status as before, Ready=False with
// the pending accesses named. This delays what the Buckety reports about
// its accesses by For at most; each access's own Ready, which its tenant
// reads, is not delayed. Only when such a hold began is kept here
// (pending).
type Held struct {
	// For is how long a provisioning pass may hold its status write back
	// waiting for its accesses (HoldFor when zero), and how long a
	// Buckety recorded Ready may leave Ready=True while new accesses are
	// pending: past it the status is written, and shows what is pending.
	For time.Duration
	// SilentFor is how long it may hold it back while no pending access
	// has said anything yet (HoldSilentFor when zero): an access whose
	// grant waits on a slow backend (IAM on SeaweedFS answers one request
	// at a time) writes its status once, Ready, and the Buckety's written
	// at For would only say that the access is pending, a second write
	// per Buckety. Once an access reports why it is not Ready (a failure),
	// For bounds the hold again.
	SilentFor time.Duration

	mu sync.Mutex
	m  map[types.NamespacedName]heldStatus
	// pending: when each Buckety recorded Ready began holding back the
	// write that only its newly pending accesses asked for.
	pending map[types.NamespacedName]heldStatus
}

// HoldFor is the default Held.For.
const HoldFor = 10 * time.Second

// HoldSilentFor is the default Held.SilentFor.
const HoldSilentFor = time.Minute

// Limit is h.For, or HoldFor.
func (h *Held) Limit() time.Duration {
	if h.For > 0 {
		return h.For
	}
	return HoldFor
}

// SilentLimit is h.SilentFor, or HoldSilentFor; never less than Limit.
func (h *Held) SilentLimit() time.Duration {
	d := HoldSilentFor
	if h.SilentFor > 0 {
		d = h.SilentFor
	}
	return max(d, h.Limit())
}

// limitFor is how long a status may be held while its pending accesses
// have (spoke) or have not said anything.
func (h *Held) limitFor(spoke bool) time.Duration {
	if spoke {
		return h.Limit()
	}
	return h.SilentLimit()
}

type heldStatus struct {
	uid        types.UID
	generation int64
	status     *v1.BucketyStatus // nil in pending
	since      time.Time
}

// pendingSince is when b's passes began holding back, on a status
// recorded Ready, the write that only newly pending accesses ask for
// (holdingReady); the first call for b's generation begins it.
func (h *Held) pendingSince(b *v1.Buckety) time.Time {
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur, ok := h.pending[key]; ok && cur.uid == b.UID && cur.generation == b.Generation {
		return cur.since
	}
	if h.pending == nil {
		h.pending = map[types.NamespacedName]heldStatus{}
	}
	now := time.Now()
	h.pending[key] = heldStatus{uid: b.UID, generation: b.Generation, since: now}
	return now
}

// endPending forgets when b's hold on a Ready status began: a pass that
// did not hold its write (its accesses Ready, or the status written).
func (h *Held) endPending(key types.NamespacedName) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pending, key)
}

// Put holds st as b's status for its current generation. The first Put of
// a generation starts its HoldFor.
func (h *Held) Put(b *v1.Buckety, st *v1.BucketyStatus) {
	if h == nil {
		return
	}
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[types.NamespacedName]heldStatus{}
	}
	since := time.Now()
	if cur, ok := h.m[key]; ok && cur.uid == b.UID && cur.generation == b.Generation {
		since = cur.since
	}
	h.m[key] = heldStatus{uid: b.UID, generation: b.Generation, status: st.DeepCopy(), since: since}
}

// Overlay replaces b's status, as read from the cache, by the status held
// for its generation, and reports when that hold started. Once the cache
// shows a Provisioned status of the generation, the held one is dropped
// and b is left as it is.
func (h *Held) Overlay(b *v1.Buckety) (since time.Time, ok bool) {
	if h == nil {
		return time.Time{}, false
	}
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, ok := h.m[key]
	if !ok {
		return time.Time{}, false
	}
	if cur.uid != b.UID || cur.generation < b.Generation || provisionedRecorded(b) {
		delete(h.m, key)
		return time.Time{}, false
	}
	if cur.generation != b.Generation {
		// A pass on a newer generation than the cache shows: leave it.
		return time.Time{}, false
	}
	usage := b.Status.Usage
	b.Status = *cur.status.DeepCopy()
	b.Status.Usage = usage
	return cur.since, true
}

// Recorded drops what is held for b once b, as the cache shows it, records
// the held status (or is another object, or a newer generation): what
// Overlay would drop on b's next pass. The Buckety controller calls it
// for every update the cache sees (heldRecorded), since the pass after a
// Buckety's last status write may come only at its re-check: a settled
// Buckety's held status would stay in memory until then, a status per
// Buckety provisioned since (about 1 KiB each).
func (h *Held) Recorded(b *v1.Buckety) {
	if h == nil {
		return
	}
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Name}
	h.mu.Lock()
	defer h.mu.Unlock()
	if cur, ok := h.m[key]; ok && (cur.uid != b.UID || cur.generation < b.Generation || provisionedRecorded(b)) {
		delete(h.m, key)
	}
}

// Supersede drops the status held for the Buckety key when a pass that
// did not hold its write found its resource another installation's
// (derived, its conditions, say Provisioned=False, OwnedElsewhere: the
// resource was deleted out of band and created again there). Overlay and
// Recorded drop a held status only once the cache shows Provisioned=True
// recorded, so the accesses would otherwise go on reading
// Provisioned=True from memory, and granting on the other installation's
// resource, for as long as the process lives. Other failures (a backend
// that does not answer) leave the held status: the resource is still
// this Buckety's, and the accesses' own passes meet the same failure.
func (h *Held) Supersede(key types.NamespacedName, hold bool, derived []status.Cond) {
	if h == nil || hold {
		return
	}
	for _, c := range derived {
		if c.Type == v1.ConditionProvisioned && c.Status == metav1.ConditionFalse && (c.Reason == v1.ReasonOwnedElsewhere || c.Reason == v1.ReasonResourceReplaced) {
			h.Forget(key)
			return
		}
	}
}

// Forget drops what is held for the Buckety key.
func (h *Held) Forget(key types.NamespacedName) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, key)
	delete(h.pending, key)
}

// Len is how many statuses are held, or holds on a Ready status kept (for
// tests and memory accounting).
func (h *Held) Len() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m) + len(h.pending)
}

// provisionedRecorded reports whether b's status records the backend
// resource as provisioned for its current generation: what an access
// waits for.
func provisionedRecorded(b *v1.Buckety) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionProvisioned)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == b.Generation && b.Status.BackendResourceName != ""
}
