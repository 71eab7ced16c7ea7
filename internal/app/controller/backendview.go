package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/backendview"
)

// addBackendView runs the BucketyBackend view on the leader when
// o.BackendProbe is set. It never blocks start-up: a backend that does not
// answer is reported, not waited for.
func addBackendView(mgr ctrl.Manager, o Options, set *backends.Set) error {
	if o.BackendProbe <= 0 {
		return nil
	}
	return mgr.Add(&backendview.View{Client: mgr.GetClient(), Backends: set, Interval: o.BackendProbe, Log: o.Log.WithName("backends")})
}
