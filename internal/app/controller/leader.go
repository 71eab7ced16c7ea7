package controller

import (
	"time"

	"github.com/Yolean/buckety-controller/internal/app/controller/options"
)

// leaderTimings are o's timings for the manager, the defaults where unset
// (tests that build Options without flags).
func leaderTimings(o Options) (lease, renew, retry *time.Duration) {
	or := func(v, def time.Duration) *time.Duration {
		if v <= 0 {
			v = def
		}
		return &v
	}
	return or(o.LeaseDuration, options.DefaultLeaseDuration), or(o.RenewDeadline, options.DefaultRenewDeadline), or(o.RetryPeriod, options.DefaultRetryPeriod)
}
