package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
	"github.com/Yolean/buckety-controller/internal/metrics"
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
//     reconciles keep failing must not keep a rotated-out key);
//   - a principal this installation issued that no BucketyCredential
//     record names (a cluster rebuilt from git after its etcd was lost, a
//     record deleted by hand), once it has been so for the backend's
//     credentials.orphanGrace (unaccounted.go).
//
// Each is confirmed by a fresh read before anything is revoked. A record,
// or a principal name carrying this installation's marker, proves the
// principal is buckety's: another installation's principals, and those
// named before markers, are never touched. Each backend is checked on a
// loop of its own (Start), so one that hangs, or whose check lasts longer
// than an interval, holds up no other backend's; and a backend that stops
// answering ends its own check at once, so it does not wait out a request
// timeout for each of its credentials. Runs on the leader only.
type Orphans struct {
	periodic.LeaderOnly
	// Reconciler revokes (its Backends and clients).
	Reconciler *Reconciler
	// Interval is how often the records are checked.
	Interval time.Duration
	// Log is the logger.
	Log logr.Logger

	// now is the clock; nil is time.Now. Tests move it past a grace.
	now func() time.Time
	// unaccounted remembers, per backend, since when each unaccounted
	// principal has been seen.
	unaccounted unaccountedSince
}

// Start implements manager.Runnable: one loop per configured backend,
// and one that prunes what the reconciler remembers of accesses that are
// gone, each at once and then once per Interval, until ctx ends. The
// backends are those the controller opened at start-up: a change of the
// config restarts it. Records of a backend no longer configured are not
// checked: nothing can revoke them (revoke leaves them to the maintainer).
func (o *Orphans) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() {
		periodic.Every(ctx, o.Interval, func(ctx context.Context) {
			if err := o.prune(ctx); err != nil && ctx.Err() == nil {
				o.Log.Error(err, "forgetting the accesses that are gone")
			}
		})
	})
	for _, name := range o.Reconciler.Backends.Names() {
		wg.Go(func() {
			periodic.Every(ctx, o.Interval, func(ctx context.Context) {
				if n, err := o.CheckBackend(ctx, name); err != nil && ctx.Err() == nil {
					o.Log.Error(err, "revoking credentials that must not work any more; next try in one interval", "backend", name, "interval", o.Interval.String())
				} else if n > 0 {
					o.Log.Info("revoked credentials that must not work any more (their access, Buckety or record is gone)", "backend", name, "revoked", n)
				}
			})
		})
	}
	wg.Wait()
	return nil
}

func (o *Orphans) clock() time.Time {
	if o.now != nil {
		return o.now()
	}
	return time.Now()
}

// CheckOnce prunes, then checks every configured backend once, each
// concurrently (CheckBackend), and returns how many credentials it
// revoked: a single round of what Start runs on a loop per backend. One
// backend's error (its service down or hung) does not keep the others'
// credentials from being revoked: the errors are joined.
func (o *Orphans) CheckOnce(ctx context.Context) (int, error) {
	if err := o.prune(ctx); err != nil {
		return 0, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		n    int
		errs []error
	)
	for _, name := range o.Reconciler.Backends.Names() {
		wg.Go(func() {
			k, err := o.CheckBackend(ctx, name)
			mu.Lock()
			defer mu.Unlock()
			n += k
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return n, errors.Join(errs...)
}

// CheckBackend revokes the unwanted credentials recorded on backend name
// (see Orphans), then its unaccounted principals; it returns how many it
// revoked. One credential that cannot be revoked does not keep the others
// from being revoked, but a backend that does not answer
// (drivers.IsUnavailable) ends the check there: the rest are tried at the
// next.
func (o *Orphans) CheckBackend(ctx context.Context, name string) (int, error) {
	n, err := o.checkBackend(ctx, name)
	if err != nil {
		err = fmt.Errorf("backend %s: %w", name, err)
	}
	return n, err
}

func (o *Orphans) checkBackend(ctx context.Context, name string) (int, error) {
	r := o.Reconciler
	// The cache's own objects, read and never written: only this
	// backend's records are copied (revoke deletes them), so a check per
	// backend holds no more than one check of all did.
	var list v1.BucketyCredentialList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for i := range list.Items {
		if list.Items[i].Spec.Backend != name {
			continue
		}
		c := list.Items[i].DeepCopy()
		why, err := o.unwanted(ctx, c, o.clock())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if why == "" {
			continue
		}
		done, err := r.revokeConfirmed(ctx, c, revokedReasons[why])
		if err != nil {
			errs = append(errs, err)
			if drivers.IsUnavailable(err) || ctx.Err() != nil {
				// The next would wait as long: the rest, and
				// the unaccounted principals, at the next check.
				return n, errors.Join(errs...)
			}
			continue
		}
		if done {
			n++
			o.Log.Info("revoked a credential", "why", why, "principal", c.Spec.Principal, "backend", c.Spec.Backend, "access", c.Spec.Owner.Namespace+"/"+c.Spec.Owner.Name)
		}
	}
	if e, ok := r.Backends.Get(name); ok && e.Principals != nil {
		k, err := o.revokeUnaccounted(ctx, e, list.Items)
		n += k
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// revokeConfirmed revokes c, judged unwanted from the cache, once the
// API server still holds it (stillRecorded), and counts it under the
// metrics reason; false when it was not revoked (gone meanwhile, or its
// backend is not in the config).
func (r *Reconciler) revokeConfirmed(ctx context.Context, c *v1.BucketyCredential, reason string) (bool, error) {
	if ok, err := r.stillRecorded(ctx, c); err != nil || !ok {
		return false, err
	}
	done, err := r.revoke(ctx, c, nil)
	if done && err == nil {
		r.secrets.forget(types.UID(c.Spec.Owner.UID))
		metrics.CredentialsRevoked.WithLabelValues(c.Spec.Backend, reason).Inc()
	}
	return done, err
}

// stillRecorded reports whether the API server still holds record c, the
// same object (its UID), before the check revokes its principal by name.
// The check works from its cache's list: a record deleted since (its
// access withdrawn, then granted again) may be in the list while a new
// record of the same name stands in the API server, for the same
// principal issued again (serials start again at 1 once an access holds
// no record). Revoking on the old one's word would cut a working
// credential. One read per revocation, none for the records kept.
func (r *Reconciler) stillRecorded(ctx context.Context, c *v1.BucketyCredential) (bool, error) {
	live := &v1.BucketyCredential{}
	switch err := r.APIReader.Get(ctx, types.NamespacedName{Name: c.Name}, live); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read credential record %s: %w", c.Name, err)
	}
	return live.UID == c.UID, nil
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
	o.Reconciler.unseen.prune(live)
	return nil
}

// Why unwanted revokes a recorded credential, as logged.
const (
	whyRetired     = "rotated out, past its retireAfter"
	whyAccessGone  = "its access is gone"
	whyBucketyGone = "the Buckety it was granted on is gone"
	whyClaimGone   = "the claim it was granted through is gone or owned by another Buckety"
	whyNarrowed    = "rotated out, holding a right its access's role no longer has"
)

// revokedReasons is each why's metrics reason.
var revokedReasons = map[string]string{
	whyRetired:     metrics.RevokedRetired,
	whyAccessGone:  metrics.RevokedAccessGone,
	whyBucketyGone: metrics.RevokedBucketyGone,
	whyClaimGone:   metrics.RevokedClaimGone,
	whyNarrowed:    metrics.RevokedRoleNarrowed,
}

// unwanted says why c must be revoked now, "" when it may stay. The cache
// answers first; what it calls gone is confirmed by a fresh read.
func (o *Orphans) unwanted(ctx context.Context, c *v1.BucketyCredential, now time.Time) (string, error) {
	if c.Spec.Phase == v1.CredentialRetiring && c.Spec.RetireAfter != nil && !now.Before(c.Spec.RetireAfter.Time) {
		return whyRetired, nil
	}
	key := types.NamespacedName{Namespace: c.Spec.Owner.Namespace, Name: c.Spec.Owner.Name}
	a := &v1.BucketyAccess{}
	gone, err := o.goneOr(ctx, key, a, func() bool { return string(a.UID) != c.Spec.Owner.UID })
	if err != nil || gone {
		return cond(gone, whyAccessGone), err
	}
	if !a.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
		// Being deleted, buckety's finalizer taken off and the access held
		// by someone else's: it is on its way out, and holds nothing (its
		// passes revoke too; this check, where they did not run or
		// failed). Neither can change back: no finalizer is added to an
		// object being deleted.
		return whyAccessGone, nil
	}
	if c.Spec.Phase == v1.CredentialRetiring && widerThanItsAccess(c, a) {
		// Its access's own passes revoke it at once; this check, where
		// they stop short of it (a Secret conflict, a key kept).
		return whyNarrowed, nil
	}
	if c.Spec.BucketyUID == "" {
		return "", nil // not bound yet: its access's next pass binds it
	}
	bound := c.Spec.Resources
	if len(bound) == 0 {
		bound = []v1.CredentialResource{{Buckety: a.BucketyNamespace() + "/" + a.Spec.BucketyRef.Name, BucketyUID: c.Spec.BucketyUID, Claim: c.Spec.Claim}}
	}
	for _, cr := range bound {
		// Every one it was granted on: a credential never outlives a
		// Buckety or claim it holds rights through.
		if why, err := o.boundGone(ctx, cr); err != nil || why != "" {
			return why, err
		}
	}
	return "", nil
}

// boundGone says why a credential granted through cr must go: its Buckety
// or its claim is gone or another's; "" when both stand.
func (o *Orphans) boundGone(ctx context.Context, cr v1.CredentialResource) (string, error) {
	ns, name, _ := strings.Cut(cr.Buckety, "/")
	b := &v1.Buckety{}
	gone, err := o.goneOr(ctx, types.NamespacedName{Namespace: ns, Name: name}, b, func() bool { return string(b.UID) != cr.BucketyUID })
	if err != nil || gone {
		return cond(gone, whyBucketyGone), err
	}
	cl := &v1.BucketyClaim{}
	gone, err = o.goneOr(ctx, types.NamespacedName{Name: cr.Claim}, cl, func() bool { return cl.Spec.Owner.UID != cr.BucketyUID })
	if err != nil || gone {
		return cond(gone, whyClaimGone), err
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
