// Package memory is what the controller does about its own resident
// memory, apart from its caches: the garbage collector's target, and
// handing the kernel back the executable's pages that start-up touched
// once. Both are measured in docs/performance.md (Memory).
package memory

import (
	"context"
	"runtime/debug"
	"strconv"

	"github.com/go-logr/logr"
)

// DefaultGOGC is the garbage collector's target (the percentage of the live
// heap it lets grow before collecting) when the GOGC environment variable
// is unset. Go's own default, 100, lets the heap reach twice the live data,
// and the controller's heap is nearly all its informer caches, which live
// as long as the process: at 1000 Bucketies the headroom was as large as
// the live heap. At 25 the heap grows a quarter above the live data, for
// more collections, each small (see docs/performance.md, Memory). An
// operator's GOGC (including GOGC=off) wins; GOMEMLIMIT works as ever.
const DefaultGOGC = 25

// StartupGOGC is the collector's target while the process starts, when
// the GOGC environment variable is unset: from the first line of main
// until the caches have synced and the controllers' first pass over the
// objects they held then is done (StartupGC then sets DefaultGOGC). A start is the one
// time the controller allocates as fast as it can: it decodes every
// object and reconciles each once. At DefaultGOGC the collector then runs
// every time the heap grows a quarter, each time marking the caches built
// so far: measured on a cold start of 25,000 Bucketies on one replica,
// 38 % of the controller's CPU was the collector's, and at StartupGOGC the
// start took 44.1 s instead of 57.0 s (docs/performance.md, Cold start).
// The price is a heap up to twice the live data during the start, bounded
// as ever by GOMEMLIMIT (the Deployment sets it to the container's limit).
const StartupGOGC = 100

// ApplyGCDefault sets StartupGOGC unless getenv("GOGC") is set, and
// returns the setting in effect, for the start-up log, and whether it is
// the start-up setting, which StartupGC ends.
func ApplyGCDefault(getenv func(string) string) (string, bool) {
	if v := getenv("GOGC"); v != "" {
		return v, false
	}
	debug.SetGCPercent(StartupGOGC)
	return strconv.Itoa(DefaultGOGC) + " (" + strconv.Itoa(StartupGOGC) + " while starting)", true
}

// StartupPages hands the kernel back, once the caches have synced, the
// pages of the controller's own binary that it has mapped so far: most
// were touched once, at start (package initialisation, API type
// registration, flag and config parsing, the caches' first list), and
// would otherwise stay resident, about 10 MiB of the 31 MiB the binary
// maps. They are clean pages of the executable file, so nothing is lost:
// what the controller runs afterwards is read back on first use, and stays
// (see docs/performance.md, Memory). It never fails the controller: a
// kernel without MADV_PAGEOUT (before Linux 5.4), a sandbox that refuses
// it, or another OS only leaves the pages where they were.
type StartupPages struct {
	// Synced waits for the caches.
	Synced func(context.Context) bool
	// Log is where a refusal is logged (at info: the pages only stay).
	Log logr.Logger
}

// NeedLeaderElection is false: a replica that waits for the lease has paid
// the same start-up cost.
func (s *StartupPages) NeedLeaderElection() bool { return false }

// Start waits for the caches, then releases the binary's pages once.
func (s *StartupPages) Start(ctx context.Context) error {
	if !s.Synced(ctx) {
		return nil
	}
	n, err := releaseBinaryPages()
	if err != nil {
		s.Log.Info("could not release the binary's start-up pages; they stay resident", "error", err.Error())
		return nil
	}
	s.Log.V(1).Info("released the binary's start-up pages", "mappedBytes", n)
	return nil
}
