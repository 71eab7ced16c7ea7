package memory

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/go-logr/logr"
)

// Heap pages freed after a burst. The controller's work comes in bursts
// (a start's list of every object, a thousand Bucketies applied at once, a
// shard taken over) on top of a heap that is nearly all its caches. What
// a burst allocated is freed by the next collections, but Go's scavenger
// returns the free pages to the kernel only gradually: measured after
// 10,000 Bucketies were provisioned on one replica, 27 MiB of its 159 MiB
// of anonymous memory was heap free and still resident (docs/performance.md,
// Memory). Releaser checks every Every and, when free pages are both
// more than ReleaseFloor and more than an eighth of the live heap, hands
// them back at once (debug.FreeOSMemory: one collection, then every free
// page). In steady state the free heap stays under that, and nothing is
// done; during a long burst at most one collection per Every is added to
// the hundreds GOGC makes.

// ReleaseFloor is the free heap below which Releaser does nothing.
const ReleaseFloor = 16 << 20

// ReleaseEvery is Releaser's default interval.
const ReleaseEvery = 30 * time.Second

// Releaser returns free heap pages to the kernel after bursts (above).
type Releaser struct {
	// Every is the interval between checks (ReleaseEvery when zero).
	Every time.Duration
	// Log is where a release is logged (at V(1)).
	Log logr.Logger
	// read and release are the runtime's (tests replace them).
	read    func() (free, live uint64)
	release func()
}

// NeedLeaderElection is false: every replica holds caches.
func (r *Releaser) NeedLeaderElection() bool { return false }

// Start checks every r.Every until ctx ends.
func (r *Releaser) Start(ctx context.Context) error {
	every := r.Every
	if every <= 0 {
		every = ReleaseEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.check()
		}
	}
}

// check releases the free heap if it is worth it, and reports whether it
// did.
func (r *Releaser) check() bool {
	read, release := r.read, r.release
	if read == nil {
		read = heapFree
	}
	if release == nil {
		release = debug.FreeOSMemory
	}
	free, live := read()
	if free < ReleaseFloor || free < live/8 {
		return false
	}
	release()
	r.Log.V(1).Info("returned free heap pages to the kernel", "freeBytes", free, "liveBytes", live)
	return true
}

// heapFree reads the runtime's free heap pages not yet returned to the
// kernel, and the live heap at the last collection.
func heapFree() (free, live uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		free = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		live = s[1].Value.Uint64()
	}
	return free, live
}
