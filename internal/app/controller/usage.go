package controller

import (
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/buckety"
)

// The usage refresh measures every provisioned resource of a backend once
// per interval, in one driver call (DescribeLogDirs and ListOffsets for a
// whole Kafka cluster, one data usage report for MinIO). Five minutes keeps
// status.usage and QuotaWarning within minutes of the service while a
// thousand Bucketies cost a few requests per interval; a status write
// happens only where a figure changed (or hourly, see
// buckety.UsageRewrite).
const (
	DefaultUsageInterval = 5 * time.Minute
	// minUsageInterval keeps a typo from measuring in a hot loop.
	minUsageInterval = time.Second
)

// validateUsage checks --usage-interval.
func validateUsage(o Options) error {
	if o.Usage != 0 && o.Usage < minUsageInterval {
		return fmt.Errorf("--usage-interval %s: want 0 (no usage refresh) or at least %s", o.Usage, minUsageInterval)
	}
	return nil
}

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
