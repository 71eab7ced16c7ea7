package controller

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
)

// addUsage runs the usage refresh on the leader when o.Usage is set,
// sending the Bucketies whose QuotaWarning changes to changed (a source of
// the Buckety controller).
func addUsage(mgr ctrl.Manager, o Options, set *backends.Set, changed chan<- event.GenericEvent) error {
	if o.Usage <= 0 {
		return nil
	}
	return mgr.Add(&buckety.UsageRefresher{
		Client: mgr.GetClient(), Backends: set, Interval: o.Usage, Changed: changed,
		Log: o.Log.WithName("usage"),
	})
}
