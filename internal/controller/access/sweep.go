package access

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
	"github.com/Yolean/buckety-controller/internal/controller/wake"
)

// CredentialSweep is the drift sweep of issued credentials: each Interval,
// per backend whose driver is a drivers.CredentialSweeper, one call judges
// every Active credential of that backend (kadm: two requests for the
// whole cluster), and the accesses whose principal drifted (rights added
// or removed out of band, the principal deleted) are reconciled with
// Assert, which restores the principal from the Secret and makes its
// rights exactly the role's. Each backend is swept on a loop of its own,
// as the Buckety drift sweep (buckety.Sweeper) is: a backend whose sweep
// hangs, or lasts longer than an interval, delays no other backend's.
// Runs on the leader only.
type CredentialSweep struct {
	periodic.LeaderOnly // only the leader sweeps, as only it reconciles
	// Reconciler supplies the clients, backends and claims, and takes the
	// drifted accesses.
	Reconciler *Reconciler
	// Interval is the period of each backend's sweep.
	Interval time.Duration
	// Wakes takes the drifted accesses to the access controller
	// (CredentialDrifted).
	Wakes *wake.Channels
	// Log is the logger.
	Log logr.Logger
}

// Start implements manager.Runnable: one loop per backend that can sweep
// its credentials, until ctx ends. Each sweeps at once when this replica
// leads (what an upgrade changed in a role's rights, a new group prefix, is
// asserted now, not an interval later), then once per Interval. The
// backends are those the controller opened at start-up: a change of the
// config restarts it.
func (s *CredentialSweep) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, name := range s.Reconciler.Backends.Names() {
		e, ok := s.Reconciler.Backends.Get(name)
		if !ok || e.CredentialSweeper == nil || e.Issuer == nil {
			continue
		}
		wg.Go(func() {
			periodic.Every(ctx, s.Interval, func(ctx context.Context) {
				n, err := s.SweepOnce(ctx, e)
				if err != nil && ctx.Err() == nil {
					s.Log.Error(err, "sweeping credentials; next try in one interval", "backend", e.Name, "interval", s.Interval.String())
				}
				if n > 0 {
					s.Log.Info("credentials drifted out of band; re-asserting them", "backend", e.Name, "accesses", n)
				}
			})
		})
	}
	wg.Wait()
	return nil
}

// SweepOnce sweeps the Active credentials of backend e once and hands
// over the drifted accesses; it returns how many drifted.
func (s *CredentialSweep) SweepOnce(ctx context.Context, e *backends.Entry) (int, error) {
	r := s.Reconciler
	// The cache's own objects, read and never written (as every Get of
	// this sweep): a copy of each credential, access and Buckety per sweep
	// was most of what a sweep of 1000 keys held at once (issue 54).
	var list v1.BucketyCredentialList
	if err := r.Client.List(ctx, &list, ctrl.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("backend %s: list credentials: %w", e.Name, err)
	}
	var (
		as    []drivers.Access
		items []sweepItem
	)
	for i := range list.Items {
		c := &list.Items[i]
		if c.Spec.Backend != e.Name || c.Spec.Phase != v1.CredentialActive {
			continue
		}
		acc, key, ok := s.expected(ctx, c)
		if !ok {
			continue
		}
		as = append(as, acc)
		items = append(items, sweepItem{types.UID(c.Spec.Owner.UID), key})
	}
	if len(as) == 0 {
		return 0, nil
	}
	return s.sweepBackend(ctx, e, as, items)
}

// sweepItem is the access of one credential handed to a sweep.
type sweepItem struct {
	uid    types.UID
	access types.NamespacedName
}

// sweepBackend sweeps the credentials as of backend e (items[i] is as[i]'s
// access) and hands over the drifted accesses; it returns how many
// drifted.
func (s *CredentialSweep) sweepBackend(ctx context.Context, e *backends.Entry, as []drivers.Access, items []sweepItem) (int, error) {
	// A backend that does not issue credentials now (its config no
	// longer asks, or it cannot) has nothing to repair them with.
	if sc, err := e.Issuer.Issuing(ctx); err != nil {
		return 0, fmt.Errorf("backend %s: %w", e.Name, err)
	} else if !sc.PerAccess {
		return 0, nil
	}
	// Some accesses may come back unjudged (with an error) beside the
	// drifted ones: the drifted are still re-asserted.
	drifted, err := e.CredentialSweeper.SweepCredentials(ctx, as)
	if err != nil {
		err = fmt.Errorf("backend %s: %w", e.Name, err)
	}
	n := 0
	for _, i := range drifted {
		it := items[i]
		s.Reconciler.reassert.mark(it.uid)
		if err := s.Wakes.CredentialDrifted(ctx, it.access.Namespace, it.access.Name); err != nil {
			return n, err
		}
		n++
	}
	return n, err
}

// expected is what the credential's principal should be allowed, from the
// cache: its access's role and parameters on its Buckety's claimed
// resource. Credentials whose access or claim is not settled are left to
// their access's own reconcile, and so is one its access's status does not
// name yet: a record born Active (a made secret) whose issue is in
// flight, or was cut short, and which that pass finishes.
func (s *CredentialSweep) expected(ctx context.Context, c *v1.BucketyCredential) (drivers.Access, types.NamespacedName, bool) {
	r := s.Reconciler
	key := types.NamespacedName{Namespace: c.Spec.Owner.Namespace, Name: c.Spec.Owner.Name}
	a := &v1.BucketyAccess{}
	if err := r.Client.Get(ctx, key, a, ctrl.UnsafeDisableDeepCopy); err != nil || string(a.UID) != c.Spec.Owner.UID || !a.DeletionTimestamp.IsZero() || a.Status.Principal != c.Spec.Principal {
		return drivers.Access{}, key, false
	}
	if a.Several() {
		// Its record names every resource it was granted on, bound to
		// their claims when its access's pass activated it.
		if c.Spec.Phase != v1.CredentialActive || len(c.Spec.Resources) == 0 {
			return drivers.Access{}, key, false
		}
		acc := recordedOn(c)
		acc.Namespace, acc.Name, acc.UID, acc.Role, acc.Parameters, acc.Principal = a.Namespace, a.Name, string(a.UID), drivers.Role(a.Spec.Role), a.Spec.Parameters, c.Spec.Principal
		return acc, key, true
	}
	b := &v1.Buckety{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: a.BucketyNamespace(), Name: a.Spec.BucketyRef.Name}, b, ctrl.UnsafeDisableDeepCopy); err != nil {
		return drivers.Access{}, key, false
	}
	owned, err := r.Claims.OwnedBy(ctx, b)
	if err != nil {
		return drivers.Access{}, key, false
	}
	for _, cl := range owned {
		if cl.Spec.Backend == c.Spec.Backend && (cl.Spec.Phase == v1.ClaimCreated || cl.Spec.Phase == v1.ClaimAdopted) {
			return drivers.Access{Resource: cl.Spec.ResourceName, Namespace: a.Namespace, Name: a.Name, UID: string(a.UID),
				Role: drivers.Role(a.Spec.Role), Parameters: a.Spec.Parameters, Principal: c.Spec.Principal}, key, true
		}
	}
	return drivers.Access{}, key, false
}

// reassertSet holds the accesses the sweep found drifted, until their next
// reconcile asserts their credential.
type reassertSet struct {
	mu sync.Mutex
	m  map[types.UID]bool
}

func (s *reassertSet) mark(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.UID]bool{}
	}
	s.m[uid] = true
}

// take reports whether uid was marked, and unmarks it.
func (s *reassertSet) take(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := s.m[uid]
	delete(s.m, uid)
	return ok
}

// The leader alone runs it (periodic.LeaderOnly).
var _ manager.LeaderElectionRunnable = (*CredentialSweep)(nil)
