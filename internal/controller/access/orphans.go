package access

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
)

// Orphans revokes credentials that must not work any more, whatever state
// their access is in:
//
//   - the access is gone (its finalizer was removed by hand, or a crash
//     came between an issue and a deletion that then completed without the
//     record);
//   - the Buckety the credential was granted on is gone, or the claim it
//     was granted through is gone or owned by another Buckety (a Buckety
//     deleted with its finalizer removed by hand, its name claimed again:
//     the old key must not reach the new owner's resource);
//   - a Retiring credential is past its retireAfter (an access whose
//     reconciles keep failing must not keep a rotated-out key).
//
// Each is confirmed by a fresh read before anything is revoked. The
// record proves the principal is buckety's: nothing unrecorded is touched.
// Runs on the leader only.
type Orphans struct {
	periodic.LeaderOnly
	// Reconciler revokes (its Backends and clients).
	Reconciler *Reconciler
	// Interval is how often the records are checked.
	Interval time.Duration
	// Log is the logger.
	Log logr.Logger
}

// Start implements manager.Runnable: a check at once, then one per Interval.
func (o *Orphans) Start(ctx context.Context) error {
	periodic.Every(ctx, o.Interval, func(ctx context.Context) {
		if n, err := o.CheckOnce(ctx); err != nil && ctx.Err() == nil {
			o.Log.Error(err, "revoking credentials whose access is gone")
		} else if n > 0 {
			o.Log.Info("revoked credentials whose access is gone (its finalizer was removed by hand)", "revoked", n)
		}
	})
	return nil
}

// CheckOnce revokes every recorded credential that must not work any
// more (see Orphans); it returns how many it revoked.
func (o *Orphans) CheckOnce(ctx context.Context) (int, error) {
	r := o.Reconciler
	if err := o.prune(ctx); err != nil {
		return 0, err
	}
	var list v1.BucketyCredentialList
	if err := r.Client.List(ctx, &list); err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		why, err := o.unwanted(ctx, c, time.Now())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if why == "" {
			continue
		}
		// One credential that cannot be revoked (its backend down)
		// does not keep the others from being revoked.
		done, err := r.revoke(ctx, c, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if done {
			n++
			r.secrets.forget(types.UID(c.Spec.Owner.UID))
			o.Log.Info("revoked a credential", "why", why, "principal", c.Spec.Principal, "backend", c.Spec.Backend, "access", c.Spec.Owner.Namespace+"/"+c.Spec.Owner.Name)
		}
	}
	return n, errors.Join(errs...)
}

// prune drops what the reconciler remembers of accesses that are gone.
func (o *Orphans) prune(ctx context.Context) error {
	var al v1.BucketyAccessList
	listed := time.Now()
	// Only the UIDs are read: the cache's own objects, not a copy of
	// every access each minute.
	if err := o.Reconciler.Client.List(ctx, &al, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	live := make(map[types.UID]bool, len(al.Items))
	for i := range al.Items {
		live[al.Items[i].UID] = true
	}
	o.Reconciler.verified.prune(live)
	o.Reconciler.secrets.prune(live)
	o.Reconciler.gates.prune(live, listed)
	return nil
}

// unwanted says why c must be revoked now, "" when it may stay. The cache
// answers first; what it calls gone is confirmed by a fresh read.
func (o *Orphans) unwanted(ctx context.Context, c *v1.BucketyCredential, now time.Time) (string, error) {
	if c.Spec.Phase == v1.CredentialRetiring && c.Spec.RetireAfter != nil && !now.Before(c.Spec.RetireAfter.Time) {
		return "rotated out, past its retireAfter", nil
	}
	key := types.NamespacedName{Namespace: c.Spec.Owner.Namespace, Name: c.Spec.Owner.Name}
	a := &v1.BucketyAccess{}
	gone, err := o.goneOr(ctx, key, a, func() bool { return string(a.UID) != c.Spec.Owner.UID })
	if err != nil || gone {
		return cond(gone, "its access is gone"), err
	}
	if c.Spec.BucketyUID == "" {
		return "", nil // not bound yet: its access's next pass binds it
	}
	b := &v1.Buckety{}
	gone, err = o.goneOr(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.BucketyRef.Name}, b, func() bool { return string(b.UID) != c.Spec.BucketyUID })
	if err != nil || gone {
		return cond(gone, "the Buckety it was granted on is gone"), err
	}
	cl := &v1.BucketyClaim{}
	gone, err = o.goneOr(ctx, types.NamespacedName{Name: c.Spec.Claim}, cl, func() bool { return cl.Spec.Owner.UID != c.Spec.BucketyUID })
	if err != nil || gone {
		return cond(gone, "the claim it was granted through is gone or owned by another Buckety"), err
	}
	return "", nil
}

// goneOr reports whether the object at key is missing or fails ok-check
// other (another object under the name), in the cache and then in a fresh
// read.
func (o *Orphans) goneOr(ctx context.Context, key types.NamespacedName, obj client.Object, other func() bool) (bool, error) {
	r := o.Reconciler
	if err := r.Client.Get(ctx, key, obj); err == nil && !other() {
		return false, nil
	}
	err := r.APIReader.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return other(), nil
}

func cond(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// The leader alone runs it (periodic.LeaderOnly).
var _ manager.LeaderElectionRunnable = (*Orphans)(nil)
