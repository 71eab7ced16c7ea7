package access

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Orphans revokes credentials whose access is gone. An access is gone
// with its credential recorded only when its finalizer was removed by
// hand (or a crash came between a mint and a deletion that then completed
// without the record): the principal still works on the backend, so it is
// revoked, and its record deleted. The record proves the principal is
// buckety's: nothing unrecorded is touched. Runs on the leader only.
type Orphans struct {
	// Reconciler revokes (its Backends and clients).
	Reconciler *Reconciler
	// Interval is how often the records are checked.
	Interval time.Duration
	// Log is the logger.
	Log logr.Logger
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (o *Orphans) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable: a check at once, then one per Interval.
func (o *Orphans) Start(ctx context.Context) error {
	t := time.NewTicker(o.Interval)
	defer t.Stop()
	for {
		if n, err := o.CheckOnce(ctx); err != nil && ctx.Err() == nil {
			o.Log.Error(err, "revoking credentials whose access is gone")
		} else if n > 0 {
			o.Log.Info("revoked credentials whose access is gone (its finalizer was removed by hand)", "revoked", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// CheckOnce revokes every recorded credential whose owning access (by
// UID, confirmed by a fresh read) is gone; it returns how many.
func (o *Orphans) CheckOnce(ctx context.Context) (int, error) {
	r := o.Reconciler
	var list v1.BucketyCredentialList
	if err := r.Client.List(ctx, &list); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		c := &list.Items[i]
		key := types.NamespacedName{Namespace: c.Spec.Owner.Namespace, Name: c.Spec.Owner.Name}
		a := &v1.BucketyAccess{}
		if err := r.Client.Get(ctx, key, a); err == nil && string(a.UID) == c.Spec.Owner.UID {
			continue
		}
		err := r.APIReader.Get(ctx, key, a)
		switch {
		case err == nil && string(a.UID) == c.Spec.Owner.UID:
			continue
		case err != nil && !apierrors.IsNotFound(err):
			return n, err
		}
		done, err := r.revoke(ctx, c, nil)
		if err != nil {
			return n, err
		}
		if done {
			n++
			o.Log.Info("revoked a credential whose access is gone", "principal", c.Spec.Principal, "backend", c.Spec.Backend, "access", key.String())
		}
	}
	return n, nil
}
