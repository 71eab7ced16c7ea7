package options

import (
	"fmt"
	"time"
)

// The leader election's timings, controller-runtime's defaults. A leader
// that stops cleanly releases the Lease at once
// (LeaderElectionReleaseOnCancel); one that crashes or is cut off from the
// API server is replaced after LeaseDuration.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// leaderJitter is client-go's leaderelection.JitterFactor: the renew
// deadline must exceed the retry period times it.
const leaderJitter = 1.2

// validateLeaderElection checks the timings the way client-go's leader
// elector would refuse them at start, naming the flags.
func (f *Flags) validateLeaderElection() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--leader-elect-lease-duration", f.LeaseDuration}, {"--leader-elect-renew-deadline", f.RenewDeadline}, {"--leader-elect-retry-period", f.RetryPeriod}} {
		if d.v <= 0 {
			return fmt.Errorf("%s %s: want a positive duration", d.flag, d.v)
		}
	}
	if f.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("--leader-elect-lease-duration %s: want a whole number of seconds: a Lease records its duration in whole seconds (leaseDurationSeconds), and the other replicas wait what it records, so a holder would go on working after they may take over", f.LeaseDuration)
	}
	if f.RenewDeadline >= f.LeaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline %s: want less than --leader-elect-lease-duration (%s), so a leader gives up before a standby may take over", f.RenewDeadline, f.LeaseDuration)
	}
	if least := time.Duration(leaderJitter * float64(f.RetryPeriod)); f.RenewDeadline <= least {
		return fmt.Errorf("--leader-elect-retry-period %s: want the renew deadline (%s) to exceed %.1f× it, so a leader can retry a failed renewal", f.RetryPeriod, f.RenewDeadline, leaderJitter)
	}
	return nil
}
