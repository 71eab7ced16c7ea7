package memory

import (
	"context"
	"runtime/debug"
	"time"

	"github.com/go-logr/logr"
)

// StartupGCMax is how long the start-up setting (StartupGOGC) lasts at
// most, whatever Settled says: a start that never settles (a queue never
// empty) runs at DefaultGOGC from then on.
const StartupGCMax = 10 * time.Minute

// StartupGC ends the collector's start-up setting (StartupGOGC, which
// ApplyGCDefault set): once Settled reports the start's work done, or
// after Max, it sets DefaultGOGC and hands the kernel back the free heap
// pages the start left (debug.FreeOSMemory: one collection, then every
// free page), so the process settles where a start at DefaultGOGC would.
type StartupGC struct {
	// Settled waits until the start's work is done and reports true, or
	// reports false when ctx ends first.
	Settled func(context.Context) bool
	// Max bounds the wait (StartupGCMax when zero).
	Max time.Duration
	// Log is where the end of the start-up setting is logged.
	Log logr.Logger
	// set and release are the runtime's (tests replace them).
	set     func(int) int
	release func()
}

// NeedLeaderElection is false: a replica that waits for the lease has
// made its caches too.
func (s *StartupGC) NeedLeaderElection() bool { return false }

// Start waits for Settled or Max, then ends the start-up setting. A stop
// before that ends it too.
func (s *StartupGC) Start(ctx context.Context) error {
	limit := s.Max
	if limit <= 0 {
		limit = StartupGCMax
	}
	set, release := s.set, s.release
	if set == nil {
		set = debug.SetGCPercent
	}
	if release == nil {
		release = debug.FreeOSMemory
	}
	begin := time.Now()
	wctx, cancel := context.WithTimeout(ctx, limit)
	settled := s.Settled(wctx)
	cancel()
	set(DefaultGOGC)
	if ctx.Err() != nil {
		return nil
	}
	release()
	s.Log.Info("start-up done: the garbage collector's target is now the default", "GOGC", DefaultGOGC, "startupGOGC", StartupGOGC, "after", time.Since(begin).Round(time.Millisecond).String(), "settled", settled)
	return nil
}
