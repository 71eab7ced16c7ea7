package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
)

// addUsage runs the usage refresh on the leader when o.Usage is set,
// waking the Bucketies whose QuotaWarning changes through wakes.
func addUsage(c client.Client, o Options, set *backends.Set, wakes *wake.Channels, mgr ctrl.Manager) error {
	if o.Usage <= 0 {
		return nil
	}
	return mgr.Add(&buckety.UsageRefresher{
		Client: c, Backends: set, Interval: o.Usage, Wakes: wakes,
		Log: o.Log.WithName("usage"),
	})
}
