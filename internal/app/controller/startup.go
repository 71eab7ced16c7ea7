package controller

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/queue"
)

// When a start's work is done, for memory.StartupGC: the caches have
// synced and every Buckety and access they held then has been reconciled
// once (the reconcile counts have reached the objects counted at the
// sync). Work that arrives meanwhile (a thousand Bucketies applied while
// the controller starts) is not the start's: it runs at the default
// setting, as it would on a controller started earlier. The work queues
// end a start too: once seen holding work, empty at two checks in a row.
// A replica with nothing to do (a standby waiting for the lease runs no
// controllers; an empty cluster queues nothing) never sees a depth above
// 0, and startupQuiet checks of empty queues end its start.

// startupQuiet is how many checks in a row that find the queues empty end
// a start in which no queued work was ever seen.
const startupQuiet = 10

// startWork is what a check reads: the items waiting in the work queues,
// and the reconciles the Buckety and access controllers have done since
// the process started.
type startWork struct {
	depth, reconciles int64
}

// startupSettled returns the wait memory.StartupGC runs: synced, then
// objects (the Bucketies and accesses cached then; an error leaves only
// the queues' rule), then a check of read every interval until the
// reconciles reach the objects or the queues' rule ends the start.
func startupSettled(synced func(context.Context) bool, objects func(context.Context) (int, error), read func() startWork, every time.Duration) func(context.Context) bool {
	return func(ctx context.Context) bool {
		if !synced(ctx) {
			return false
		}
		n, err := objects(ctx)
		counted := err == nil
		t := time.NewTicker(every)
		defer t.Stop()
		seen, empty := false, 0
		for {
			w := read()
			if w.depth > 0 {
				seen, empty = true, 0
			} else {
				empty++
			}
			if counted && w.reconciles >= int64(n) {
				return true
			}
			if (seen && empty >= 2) || (!seen && empty >= startupQuiet) {
				return true
			}
			select {
			case <-ctx.Done():
				return false
			case <-t.C:
			}
		}
	}
}

// cachedObjects counts the Bucketies and accesses r holds.
func cachedObjects(r client.Reader) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		var bl v1.BucketyList
		if err := r.List(ctx, &bl, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		var al v1.BucketyAccessList
		if err := r.List(ctx, &al, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		return len(bl.Items) + len(al.Items), nil
	}
}

// readStartWork is a check of this process's work queues
// (queue.Stats): the items waiting and the items finished, one per
// reconcile of the Buckety and access controllers.
func readStartWork() startWork {
	waiting, done := queue.Stats()
	return startWork{depth: waiting, reconciles: done}
}
