package claims

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
)

// Janitor finds claims whose owning Buckety is gone, and stamps their
// status.ownerGoneSince, so `kubectl get bucketyclaims` shows them (column
// Owner-Gone) and the buckety_claims{owner="gone"} gauge and its alert
// tell the maintainer. A Buckety is gone with its claim still there only
// when its finalizer was removed by hand: buckety then never released the
// claim or applied the retentionPolicy, and the resource is left as it is
// (never deleted: no live owner says to). The claim stays reclaimable: a
// Buckety that resolves to the same resource takes it over, after its
// adoption check, and a maintainer may delete the claim to release the
// name. The Janitor runs on the leader only.
type Janitor struct {
	periodic.LeaderOnly
	// Reader lists claims and Bucketies: the manager's cache.
	Reader ctrl.Reader
	// Store confirms each candidate fresh and writes the stamp.
	Store *Store
	// Interval is how often the claims are checked.
	Interval time.Duration
	// Log is the logger.
	Log logr.Logger
}

// Start implements manager.Runnable: a check at once, then one per Interval.
func (j *Janitor) Start(ctx context.Context) error {
	periodic.Every(ctx, j.Interval, func(ctx context.Context) {
		if n, err := j.CheckOnce(ctx); err != nil && ctx.Err() == nil {
			j.Log.Error(err, "checking claims for owners that are gone")
		} else if n > 0 {
			j.Log.Info("claims whose owning Buckety is gone (its finalizer was removed by hand); their resources are left as they are", "newlyFound", n)
		}
	})
	return nil
}

// CheckOnce stamps every claim whose owner is gone (as a fresh read
// confirms) and is not stamped yet; it returns how many it stamped.
func (j *Janitor) CheckOnce(ctx context.Context) (int, error) {
	var bl v1.BucketyList
	if err := j.Reader.List(ctx, &bl, ctrl.UnsafeDisableDeepCopy); err != nil { // only their UIDs are read
		return 0, err
	}
	present := make(map[string]bool, len(bl.Items))
	for i := range bl.Items {
		present[string(bl.Items[i].UID)] = true
	}
	var cl v1.BucketyClaimList
	if err := j.Reader.List(ctx, &cl); err != nil {
		return 0, err
	}
	n := 0
	for i := range cl.Items {
		c := &cl.Items[i]
		if c.Status.OwnerGoneSince != nil && present[c.Spec.Owner.UID] {
			// Taken over since it was stamped (Store.takeOver clears the
			// stamp; this is for a takeover whose clearing failed).
			if err := j.Store.ClearOwnerGone(ctx, c.DeepCopy()); err != nil {
				return n, err
			}
			continue
		}
		if c.Status.OwnerGoneSince != nil || present[c.Spec.Owner.UID] || IsRetained(c) {
			// A retained claim's owner is gone by design: spec.retained
			// tells it.
			continue
		}
		alive, err := j.Store.OwnerExists(ctx, c)
		if err != nil {
			return n, err
		}
		if alive {
			continue // the cache lags
		}
		if err := j.Store.MarkOwnerGone(ctx, c.DeepCopy(), metav1.Now()); err != nil {
			return n, err
		}
		j.Log.Info("claim's owner is gone", "claim", c.Name, "backend", c.Spec.Backend, "resource", c.Spec.ResourceName, "owner", c.Spec.Owner.Namespace+"/"+c.Spec.Owner.Name, "phase", c.Spec.Phase)
		n++
	}
	return n, nil
}

// The leader alone runs it (periodic.LeaderOnly).
var _ manager.LeaderElectionRunnable = (*Janitor)(nil)
