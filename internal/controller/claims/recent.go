package claims

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// recentFor is how long a claim this store wrote is remembered while the
// cache does not show it: far longer than a healthy watch lags, short
// enough that a claim deleted behind the controller's back is not believed
// for long (and every backend write on a claim not written by the pass
// itself reads it fresh first: drivers.Resource.BeforeWrite).
const recentFor = 30 * time.Second

// recent remembers the claims this store created or updated until the
// cache shows them: the pass that wrote a claim is followed at once by
// others (its own writes wake them), which read claims from a cache whose
// claim watch may not have delivered that write yet. Without this they
// would inspect the backend again and try to create the claim again.
type recent struct {
	mu sync.Mutex
	m  map[string]recentClaim
	// byOwner names each owner's remembered claims.
	byOwner map[string]map[string]bool
	// pruned is when expired entries were last dropped.
	pruned time.Time
}

type recentClaim struct {
	claim *v1.BucketyClaim
	at    time.Time
}

func (r *recent) put(cl *v1.BucketyClaim) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m, r.byOwner = map[string]recentClaim{}, map[string]map[string]bool{}
	}
	now := time.Now()
	if now.Sub(r.pruned) > recentFor {
		// At most once per recentFor, so a burst of writes costs no scan
		// each.
		r.pruned = now
		for name, e := range r.m {
			if now.Sub(e.at) > recentFor {
				r.deleteLocked(name)
			}
		}
	}
	r.deleteLocked(cl.Name)
	r.m[cl.Name] = recentClaim{claim: cl.DeepCopy(), at: now}
	owner := cl.Spec.Owner.UID
	if r.byOwner[owner] == nil {
		r.byOwner[owner] = map[string]bool{}
	}
	r.byOwner[owner][cl.Name] = true
}

func (r *recent) drop(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleteLocked(name)
}

func (r *recent) deleteLocked(name string) {
	e, ok := r.m[name]
	if !ok {
		return
	}
	delete(r.m, name)
	owner := e.claim.Spec.Owner.UID
	delete(r.byOwner[owner], name)
	if len(r.byOwner[owner]) == 0 {
		delete(r.byOwner, owner)
	}
}

// newer returns the remembered claim name when the cache's copy (nil: the
// cache has none) is older than it; a cache that caught up ends the
// remembering.
func (r *recent) newer(name string, cached *v1.BucketyClaim) *v1.BucketyClaim {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.m[name]
	if !ok {
		return nil
	}
	if time.Since(e.at) > recentFor {
		r.deleteLocked(name)
		return nil
	}
	if cached != nil {
		cmp, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, e.claim.ResourceVersion)
		if err != nil || cmp >= 0 || cached.UID != e.claim.UID {
			r.deleteLocked(name)
			return nil
		}
	}
	return e.claim.DeepCopy()
}

// matching returns the names of the remembered claims keep selects.
func (r *recent) matching(keep func(*v1.BucketyClaim) bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for name, e := range r.m {
		if keep(e.claim) {
			names = append(names, name)
		}
	}
	return names
}

// owned returns the remembered claims of owner uid.
func (r *recent) owned(uid types.UID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for name := range r.byOwner[string(uid)] {
		names = append(names, name)
	}
	return names
}

// cachedGet reads the claim name from the cache, or the newer copy this
// store wrote when the cache lags it.
func (c *Store) cachedGet(ctx context.Context, name string, into *v1.BucketyClaim) error {
	err := c.Client.Get(ctx, types.NamespacedName{Name: name}, into)
	var cached *v1.BucketyClaim
	switch {
	case err == nil:
		cached = into
	case !apierrors.IsNotFound(err):
		return err
	}
	if mine := c.recent.newer(name, cached); mine != nil {
		*into = *mine
		return nil
	}
	return err
}
