// Package periodic is the one loop the controller's leader-only jobs run
// in: the orphaned-credential check, the claims' owner check and the two
// drift sweeps.
package periodic

import (
	"context"
	"time"
)

// Every runs f at once, then once per interval until ctx ends. A run that
// takes longer than interval is followed by the next at once, never by
// two: ticks that fall during a run are dropped.
func Every(ctx context.Context, interval time.Duration, f func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// LeaderOnly, embedded in a manager.Runnable, makes it run on the elected
// leader only (manager.LeaderElectionRunnable): the jobs act on what only
// the leader reconciles.
type LeaderOnly struct{}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (LeaderOnly) NeedLeaderElection() bool { return true }
