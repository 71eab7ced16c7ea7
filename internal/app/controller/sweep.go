package controller

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/internal/app/controller/options"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
)

// sweepRecheck is the Buckety reconciler's per-object re-check on backends
// whose sweep is complete, and the drivers.Resource.MaxAge of its Ensure
// there (buckety.Options): with the sweep on, a long safety net and one
// sweep interval, since the sweep bounds how long drift goes unseen; with
// it off, zero (every Buckety re-checked every Recheck, reading the
// backend every time).
func sweepRecheck(o Options) (swept, maxAge time.Duration) {
	if o.DriftSweep <= 0 {
		return 0, 0
	}
	swept = o.SweptRecheck
	if swept <= 0 {
		swept = options.DefaultSweptRecheckInterval
	}
	return swept, o.DriftSweep
}

// addSweeper runs the drift sweep on the leader when o.DriftSweep is set,
// waking the drifted Bucketies through wakes.
func addSweeper(r client.Reader, o Options, set *backends.Set, wakes *wake.Channels, mgr ctrl.Manager) error {
	if o.DriftSweep <= 0 {
		return nil
	}
	return mgr.Add(&buckety.Sweeper{
		Reader: r, Backends: set, Interval: o.DriftSweep, Wakes: wakes,
		Log: o.Log.WithName("drift-sweep"),
	})
}
