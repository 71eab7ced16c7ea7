package claims

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyclaims,verbs=get;list;watch;create;update;delete

// Store reads and writes BucketyClaim objects: the controller's own,
// tenant-unforgeable record of which Buckety owns which backend resource and
// whether buckety created it. See the package doc for why claims are API
// objects rather than memory or status fields. Both reconcilers share one.
type Store struct {
	// Client is the manager's (cached) client; claims are read from its cache
	// in the steady state.
	Client ctrl.Client
	// APIReader reads around the cache where a stale read could hand one
	// resource to two owners or delete what is not ours.
	APIReader ctrl.Reader
}

// Name is the name of the claim on one backend resource: a hash, since
// resource names (Kafka topics) may hold characters object names cannot.
func Name(backend, resource string) string {
	sum := sha256.Sum256([]byte(backend + "\x00" + resource))
	return "bky-" + hex.EncodeToString(sum[:20])
}

// Conflict is a claim held by another, existing Buckety.
type Conflict struct {
	// Owner is the holder, as namespace/name; it was read fresh and exists.
	Owner string
	// Phase is the holder's claim phase.
	Phase v1.ClaimPhase
}

// Acquire returns b's claim on resource, creating it in phase Claimed when
// nobody holds it. A claim held by another Buckety that still exists (read
// fresh from the API server) is a Conflict. A claim whose owner no longer
// exists (a Buckety force-deleted without its finalizer) is stale: it is
// removed and the claim taken, after which the caller's adoption check
// decides whether the resource may be used.
func (c *Store) Acquire(ctx context.Context, b *v1.Buckety, backend, resource string) (*v1.BucketyClaim, *Conflict, error) {
	cl, _, conflict, err := c.AcquireAs(ctx, b, backend, resource, v1.ClaimClaimed)
	return cl, conflict, err
}

// AcquireAs is Acquire for a caller that inspected the resource before
// claiming it: a claim it creates is born in phase (the adoption check's
// verdict), one write instead of a create and an update. created reports
// whether this call created the claim; a claim b already held is returned
// as it is, in whatever phase an earlier pass recorded.
func (c *Store) AcquireAs(ctx context.Context, b *v1.Buckety, backend, resource string, phase v1.ClaimPhase) (cl *v1.BucketyClaim, created bool, conflict *Conflict, err error) {
	name := Name(backend, resource)
	cl = &v1.BucketyClaim{}
	if err := c.Client.Get(ctx, types.NamespacedName{Name: name}, cl); err == nil && cl.Spec.Owner.UID == string(b.UID) && matches(cl, backend, resource) {
		return cl, false, nil, nil
	} else if err != nil && !apierrors.IsNotFound(err) {
		return nil, false, nil, fmt.Errorf("read claim %s: %w", name, err)
	}
	for range 3 {
		cl = &v1.BucketyClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.ClaimOwnerLabel: string(b.UID)}},
			Spec: v1.BucketyClaimSpec{Backend: backend, ResourceName: resource, Phase: phase,
				Owner: v1.ClaimOwner{Namespace: b.Namespace, Name: b.Name, UID: string(b.UID)}},
		}
		err := c.Client.Create(ctx, cl)
		if err == nil {
			return cl, true, nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, false, nil, fmt.Errorf("create claim %s: %w", name, err)
		}
		cur := &v1.BucketyClaim{}
		if err := c.APIReader.Get(ctx, types.NamespacedName{Name: name}, cur); apierrors.IsNotFound(err) {
			continue // released meanwhile: try again
		} else if err != nil {
			return nil, false, nil, fmt.Errorf("read claim %s: %w", name, err)
		}
		if !matches(cur, backend, resource) {
			return nil, false, nil, fmt.Errorf("claim %s is for %s on backend %s, not %s: refusing to share it (hash collision or a hand-made claim)", name, cur.Spec.ResourceName, cur.Spec.Backend, resource)
		}
		if cur.Spec.Owner.UID == string(b.UID) {
			return cur, false, nil, nil
		}
		alive, err := c.ownerExists(ctx, cur)
		if err != nil {
			return nil, false, nil, err
		}
		if alive {
			return nil, false, &Conflict{Owner: cur.Spec.Owner.Namespace + "/" + cur.Spec.Owner.Name, Phase: cur.Spec.Phase}, nil
		}
		if err := c.delete(ctx, cur); err != nil {
			return nil, false, nil, fmt.Errorf("remove stale claim %s of deleted Buckety %s/%s: %w", name, cur.Spec.Owner.Namespace, cur.Spec.Owner.Name, err)
		}
	}
	return nil, false, nil, fmt.Errorf("claim %s changed hands repeatedly; retrying", name)
}

// Held returns the claim on resource when b holds it, read from the cache
// when fresh is false, from the API server otherwise; nil when b holds no
// such claim (nobody does, or another Buckety does: other is then true,
// as far as that read shows).
func (c *Store) Held(ctx context.Context, b *v1.Buckety, backend, resource string, fresh bool) (cl *v1.BucketyClaim, other bool, err error) {
	name := Name(backend, resource)
	var r ctrl.Reader = c.Client
	if fresh {
		r = c.APIReader
	}
	cl = &v1.BucketyClaim{}
	switch err := r.Get(ctx, types.NamespacedName{Name: name}, cl); {
	case apierrors.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("read claim %s: %w", name, err)
	}
	if cl.Spec.Owner.UID == string(b.UID) && matches(cl, backend, resource) {
		return cl, false, nil
	}
	return nil, true, nil
}

func matches(cl *v1.BucketyClaim, backend, resource string) bool {
	return cl.Spec.Backend == backend && cl.Spec.ResourceName == resource
}

// ownerExists reads the claim's owner fresh: a claim is stale only when no
// Buckety with its UID exists.
func (c *Store) ownerExists(ctx context.Context, cl *v1.BucketyClaim) (bool, error) {
	o := &v1.Buckety{}
	err := c.APIReader.Get(ctx, types.NamespacedName{Namespace: cl.Spec.Owner.Namespace, Name: cl.Spec.Owner.Name}, o)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read owner of claim %s: %w", cl.Name, err)
	}
	return string(o.UID) == cl.Spec.Owner.UID, nil
}

// Advance moves a claim to phase with an optimistic-lock update, so a claim
// changed by anyone else meanwhile is never overwritten.
func (c *Store) Advance(ctx context.Context, cl *v1.BucketyClaim, phase v1.ClaimPhase) error {
	if cl.Spec.Phase == phase {
		return nil
	}
	prev := cl.Spec.Phase
	cl.Spec.Phase = phase
	if err := c.Client.Update(ctx, cl); err != nil {
		cl.Spec.Phase = prev
		return fmt.Errorf("record claim %s as %s: %w", cl.Name, phase, err)
	}
	return nil
}

// Owned lists every claim b holds, read fresh: deletion and name changes
// must see claims the cache may not have yet.
func (c *Store) Owned(ctx context.Context, uid types.UID) ([]v1.BucketyClaim, error) {
	var list v1.BucketyClaimList
	if err := c.APIReader.List(ctx, &list, ctrl.MatchingLabels{v1.ClaimOwnerLabel: string(uid)}); err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	out := list.Items[:0]
	for _, cl := range list.Items {
		if cl.Spec.Owner.UID == string(uid) {
			out = append(out, cl)
		}
	}
	return out, nil
}

// OwnedCached lists b's claims from the cache (steady state).
func (c *Store) OwnedCached(ctx context.Context, uid types.UID) ([]v1.BucketyClaim, error) {
	var list v1.BucketyClaimList
	if err := c.Client.List(ctx, &list, ctrl.MatchingLabels{v1.ClaimOwnerLabel: string(uid)}); err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	return list.Items, nil
}

// Release deletes a claim held by its owner, as read: the delete carries
// the claim's UID and resourceVersion, so a claim read from a cache that
// lags behind (still Claimed there, already Creating or Created on the API
// server) is never released on the strength of that stale read; the
// conflict is returned and the caller retries from a fresh state. A claim
// already gone is fine.
func (c *Store) Release(ctx context.Context, cl *v1.BucketyClaim) error {
	uid, rv := cl.UID, cl.ResourceVersion
	err := c.Client.Delete(ctx, cl, ctrl.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("claim %s changed since it was read (not released): %w", cl.Name, err)
	}
	return err
}

func (c *Store) delete(ctx context.Context, cl *v1.BucketyClaim) error {
	uid := cl.UID
	err := c.Client.Delete(ctx, cl, ctrl.Preconditions{UID: &uid})
	// Conflict on a UID precondition: this claim is already gone and another
	// took its name; that one is not ours to delete.
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// Deletable reports whether a claim's phase allows retentionPolicy Delete to
// remove the resource: what buckety created (or recorded its intent to
// create before a crash), and a settled adoption only when the backend's
// maintainer allows deleting adopted resources (adoption.deleteAdopted).
// An adoption that never settled, or a claim never written to, never is.
func Deletable(cl *v1.BucketyClaim, deleteAdopted bool) bool {
	switch cl.Spec.Phase {
	case v1.ClaimCreated, v1.ClaimCreating:
		return true
	case v1.ClaimAdopted:
		return deleteAdopted
	}
	return false
}
