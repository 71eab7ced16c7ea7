package controller

import (
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/backendview"
)

// minBackendProbe keeps a typo from probing in a hot loop.
const minBackendProbe = time.Second

// validateBackendProbe checks --backend-probe-interval.
func validateBackendProbe(o Options) error {
	if o.BackendProbe != 0 && o.BackendProbe < minBackendProbe {
		return fmt.Errorf("--backend-probe-interval %s: want 0 (no probe, no BucketyBackend objects) or at least %s", o.BackendProbe, minBackendProbe)
	}
	return nil
}

// addBackendView runs the BucketyBackend view on the leader when
// o.BackendProbe is set. It never blocks start-up: a backend that does not
// answer is reported, not waited for.
func addBackendView(mgr ctrl.Manager, o Options, set *backends.Set) error {
	if o.BackendProbe <= 0 {
		return nil
	}
	return mgr.Add(&backendview.View{Client: mgr.GetClient(), Backends: set, Interval: o.BackendProbe, Log: o.Log.WithName("backends")})
}
