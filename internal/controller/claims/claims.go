package claims

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyclaims,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyclaims/status,verbs=patch

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
	// Serves is the shard whose claims the cache holds; nil: all of them.
	// A claim of a Buckety another shard serves (one shared with an
	// access of this shard's) is read from the API server.
	Serves *shard.Serves

	recent recent
}

// Name is the name of the claim on one backend resource: a hash, since
// resource names (Kafka topics) may hold characters object names cannot.
// space is the claim space: the backend's service (Key.Service).
func Name(space, resource string) string {
	sum := sha256.Sum256([]byte(space + "\x00" + resource))
	return "bky-" + hex.EncodeToString(sum[:20])
}

// Key identifies one backend resource for claiming.
type Key struct {
	// Backend is the backend the Buckety names; the claim records it.
	Backend string
	// Service is the claim space (the backend's service in the config, by
	// default the backend's name): one resource of one service has one
	// claim, whichever backend names it.
	Service string
	// Resource is the resolved resource name (topic, bucket).
	Resource string
	// Siblings are every backend of the service, Backend included. Claims
	// made before services existed are named by backend, not service: a
	// sibling's claim under that name is found and honoured too.
	Siblings []string
}

func (k Key) space() string {
	if k.Service != "" {
		return k.Service
	}
	return k.Backend
}

// Name is the name a claim made now on k gets.
func (k Key) Name() string { return Name(k.space(), k.Resource) }

// names are the names a claim on k may have: Name, then the names of
// claims made by a sibling before services existed.
func (k Key) names() []string {
	out := []string{k.Name()}
	for _, b := range append([]string{k.Backend}, k.Siblings...) {
		if n := Name(b, k.Resource); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// covers reports whether cl is a claim on k's resource, through any backend
// of its service.
func (k Key) covers(cl *v1.BucketyClaim) bool {
	return cl.Spec.ResourceName == k.Resource && (cl.Spec.Backend == k.Backend || slices.Contains(k.Siblings, cl.Spec.Backend))
}

// mine reports whether cl is b's claim on k.
func (k Key) mine(cl *v1.BucketyClaim, b *v1.Buckety) bool {
	return cl.Spec.Owner.UID == string(b.UID) && cl.Spec.Backend == k.Backend && cl.Spec.ResourceName == k.Resource
}

// Conflict is a claim held by another, existing Buckety.
type Conflict struct {
	// Owner is the holder, as namespace/name; it was read fresh and exists.
	// It is the maintainer's to know (logs), not the tenant's: tell a
	// tenant only SameNamespace owners.
	Owner string
	// SameNamespace is true when the holder is in the claimant's namespace.
	SameNamespace bool
	// Phase is the holder's claim phase.
	Phase v1.ClaimPhase
}

// Acquire returns b's claim on k, creating it in phase Claimed when
// nobody holds it. A claim held by another Buckety that still exists (read
// fresh from the API server) is a Conflict, unless that Buckety let it go
// (retained: it is taken over in place). A claim whose owner no longer
// exists (a Buckety force-deleted without its finalizer) is stale: it is
// removed and the claim taken, after which the caller's adoption check
// decides whether the resource may be used.
func (c *Store) Acquire(ctx context.Context, b *v1.Buckety, k Key) (*v1.BucketyClaim, *Conflict, error) {
	cl, _, conflict, err := c.AcquireAs(ctx, b, k, v1.ClaimClaimed, nil, nil)
	return cl, conflict, err
}

// AcquireAs is Acquire for a caller that inspected the resource before
// claiming it: a claim it creates is born in phase (the adoption check's
// verdict) with location recorded, one write instead of a create and an
// update (and, under a namespace budget, what the resource counts against
// it). created reports whether this call created the claim; a claim b
// already held is returned as it is, in whatever phase an earlier pass
// recorded.
func (c *Store) AcquireAs(ctx context.Context, b *v1.Buckety, k Key, phase v1.ClaimPhase, location map[string]string, budgeted *v1.Budgeted) (cl *v1.BucketyClaim, created bool, conflict *Conflict, err error) {
	// Mine already (under any of its names), as the cache shows?
	for _, n := range k.names() {
		cl = &v1.BucketyClaim{}
		if err := c.cachedGet(ctx, n, cl); err == nil && k.mine(cl, b) {
			return cl, false, nil, nil
		} else if err != nil && !apierrors.IsNotFound(err) {
			return nil, false, nil, fmt.Errorf("read claim %s: %w", n, err)
		}
	}
	// A sibling's claim made before services existed holds the resource
	// as much as one under the service's name does.
	for _, n := range k.names()[1:] {
		cached := &v1.BucketyClaim{}
		if err := c.cachedGet(ctx, n, cached); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return nil, false, nil, fmt.Errorf("read claim %s: %w", n, err)
		}
		cur, took, conflict, err := c.held(ctx, b, k, n, phase, location, budgeted)
		if err != nil || conflict != nil || cur != nil {
			return cur, took, conflict, err
		}
	}
	name := k.Name()
	for range 3 {
		cl = &v1.BucketyClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.ClaimOwnerLabel: string(b.UID), shard.SlotLabel: shard.SlotValue(b.Namespace)}},
			Spec: v1.BucketyClaimSpec{Backend: k.Backend, Service: k.space(), ResourceName: k.Resource, Phase: phase, Location: location, Budgeted: budgeted,
				Owner: v1.ClaimOwner{Namespace: b.Namespace, Name: b.Name, UID: string(b.UID)}, ServiceID: serviceIDFrom(ctx)},
		}
		err := c.Client.Create(ctx, cl)
		if err == nil {
			c.recent.put(cl)
			return cl, true, nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			// The create may have been committed with its reply lost:
			// a claim this store does not know it wrote would leave
			// the namespace's next pass through its gate counting
			// without it (and the gate open at once).
			if cur := c.committed(ctx, name, err, func(cur *v1.BucketyClaim) bool { return k.mine(cur, b) }); cur != nil {
				return cur, true, nil, nil
			}
			return nil, false, nil, fmt.Errorf("create claim %s: %w", name, err)
		}
		cur, took, conflict, err := c.held(ctx, b, k, name, phase, location, budgeted)
		if err != nil || conflict != nil || cur != nil {
			return cur, took, conflict, err
		}
	}
	return nil, false, nil, fmt.Errorf("claim %s changed hands repeatedly; retrying", name)
}

// held reads the claim named name fresh and says what it means for b: b's
// own (returned), another live Buckety's (a Conflict), gone or stale (both
// nil: a stale claim of a deleted owner is removed, so the caller may
// claim). A stale claim on a resource buckety wrote to (or one retained
// already) is not removed: it counts against its namespace until a
// maintainer releases it, so b takes it over in place (took), in phase
// with budgeted, at the location the claim recorded (see takeOver),
// keeping the retained record (ClaimRetained) until b has written to the
// resource itself, so a takeover that is refused or given up reverts to
// it (LetGo) instead of freeing what the resource counts.
func (c *Store) held(ctx context.Context, b *v1.Buckety, k Key, name string, phase v1.ClaimPhase, location map[string]string, budgeted *v1.Budgeted) (*v1.BucketyClaim, bool, *Conflict, error) {
	cur := &v1.BucketyClaim{}
	if err := c.APIReader.Get(ctx, types.NamespacedName{Name: name}, cur); apierrors.IsNotFound(err) {
		return nil, false, nil, nil
	} else if err != nil {
		return nil, false, nil, fmt.Errorf("read claim %s: %w", name, err)
	}
	if !k.covers(cur) {
		return nil, false, nil, fmt.Errorf("claim %s is not for %s on backend %s: refusing to share it (hash collision or a hand-made claim)", name, k.Resource, k.Backend)
	}
	if k.mine(cur, b) {
		return cur, false, nil, nil
	}
	// A retained claim was given up by its owner (LetGo): deleted with
	// Retain, moved to another name, or refused. The owner may still
	// exist a moment (its deletion pass removes the finalizer after
	// letting go) or for good (renamed): either way the claim is free to
	// take over. Waiting for the owner to be gone lost the wake: the
	// release's wakes came while it still existed, and its disappearance
	// changes no claim to wake anyone again.
	alive := false
	if !IsRetained(cur) {
		var err error
		if alive, err = c.ownerExists(ctx, cur); err != nil {
			return nil, false, nil, err
		}
	}
	if alive {
		return nil, false, &Conflict{Owner: cur.Spec.Owner.Namespace + "/" + cur.Spec.Owner.Name, SameNamespace: cur.Spec.Owner.Namespace == b.Namespace, Phase: cur.Spec.Phase}, nil
	}
	if Written(cur.Spec.Phase) || cur.Spec.Retained != nil {
		return c.takeOver(ctx, b, k, cur, phase, location, budgeted)
	}
	if err := c.delete(ctx, cur); err != nil {
		return nil, false, nil, fmt.Errorf("remove stale claim %s of a deleted Buckety: %w", name, err)
	}
	return nil, false, nil, nil
}

// Written reports whether a claim's owner has written to its resource
// (created it, or settled its adoption): the resource then counts against
// the owner's namespace until it is deleted or released.
func Written(p v1.ClaimPhase) bool {
	return p == v1.ClaimCreated || p == v1.ClaimCreating || p == v1.ClaimAdopted
}

// takeOver makes cur, whose owner is gone, b's in phase, keeping (or
// starting, from the gone owner's) the retained record, until b has
// written to the resource: a takeover recorded Created keeps it too,
// until its create has succeeded (CreateSucceeded), so a create that
// fails, or never runs, leaves what the name was retained from. The
// claim keeps the location it recorded (where the resource lives), not
// b's: a phase b's check found at another location is not recorded, and
// the claim is taken over Claimed instead, for the check to run where the
// resource lives. An optimistic-lock update: a claim changed meanwhile is
// read again by the caller's loop.
func (c *Store) takeOver(ctx context.Context, b *v1.Buckety, k Key, cur *v1.BucketyClaim, phase v1.ClaimPhase, location map[string]string, budgeted *v1.Budgeted) (*v1.BucketyClaim, bool, *Conflict, error) {
	cl := cur.DeepCopy()
	if Written(cl.Spec.Phase) {
		cl.Spec.Retained = &v1.ClaimRetained{Since: metav1.Now(), Owner: cl.Spec.Owner, Phase: cl.Spec.Phase}
		if IsRetained(cur) {
			cl.Spec.Retained.Since, cl.Spec.Retained.RecordUnmarked = cur.Spec.Retained.Since, cur.Spec.Retained.RecordUnmarked
		}
		// What the writer's claim says, for LetGo to restore: b's
		// backend and footprint replace them below.
		r := cl.Spec.Retained
		r.Backend, r.Service, r.Location, r.Budgeted = cur.Spec.Backend, cur.Spec.Service, cur.Spec.Location, cur.Spec.Budgeted
	}
	// Where the resource lives is what its writer's claim recorded (kept
	// in the retained record; a record made before it kept the location
	// leaves the claim's own), whatever b's parameters say: the location
	// picks the endpoint of every call on the resource, and another would
	// create a second resource of the name there, or act on one that is
	// not the claim's. A claim that recorded none (made before claims
	// recorded it) takes b's, as provision backfills any such claim.
	recorded := cur.Spec.Location
	if r := cl.Spec.Retained; r != nil && r.Backend != "" {
		recorded = r.Location
	}
	if recorded != nil {
		if phase != v1.ClaimClaimed && !maps.Equal(recorded, location) {
			// b's check looked elsewhere: what it found there says
			// nothing of this resource.
			phase = v1.ClaimClaimed
		}
		location = recorded
	}
	cl.Spec.Owner = v1.ClaimOwner{Namespace: b.Namespace, Name: b.Name, UID: string(b.UID)}
	// The record the gone owner wrote on the resource says nothing of
	// b's, which b writes once it holds the resource (RecordOwner).
	cl.Spec.OwnerRecorded = false
	// Through the backend b names (a sibling of the same service may have
	// made it), as a claim b made would be.
	cl.Spec.Backend, cl.Spec.Service = k.Backend, k.space()
	cl.Spec.Phase = phase
	cl.Spec.Location = location
	if budgeted != nil {
		cl.Spec.Budgeted = budgeted
	}
	if cl.Labels == nil {
		cl.Labels = map[string]string{}
	}
	cl.Labels[v1.ClaimOwnerLabel] = string(b.UID)
	cl.Labels[shard.SlotLabel] = shard.SlotValue(b.Namespace)
	if err := c.Client.Update(ctx, cl); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil, false, nil, nil
		}
		// Committed with its reply lost: the claim is b's, and counted
		// as this store's own write (see AcquireAs).
		cur := c.committed(ctx, cl.Name, err, func(cur *v1.BucketyClaim) bool { return k.mine(cur, b) && cur.Spec.Phase == phase })
		if cur == nil {
			return nil, false, nil, fmt.Errorf("take over claim %s of a deleted Buckety: %w", cl.Name, err)
		}
		cl = cur
	}
	// Its owner is b now: the stamp (kubectl get bkyc, Owner-Gone) is no
	// longer true.
	if err := c.ClearOwnerGone(ctx, cl); err != nil {
		return nil, false, nil, err
	}
	c.recent.put(cl)
	return cl, true, nil, nil
}

// LetGo gives up a claim whose owner no longer holds its resource (the
// owner is deleted, moved to another name, or was refused the resource)
// without freeing what a resource left on the backend counts: a claim
// its owner wrote to is kept as retained from that owner; one that took
// over a retained resource and never wrote to it reverts to the record
// it took over; any other is released. It returns whether the claim was
// released (deleted). Optimistic locks throughout, as Release.
func (c *Store) LetGo(ctx context.Context, cl *v1.BucketyClaim) (bool, error) {
	return c.letGo(ctx, cl, false)
}

// LetGoRecordUnmarked is LetGo for a deleted Buckety whose owner record
// on the backend could not be marked retained (its backend is missing
// from the config): a claim kept as retained says so (recordUnmarked), so
// a later Buckety of the same name is not handed the resource back as
// its own by that record.
func (c *Store) LetGoRecordUnmarked(ctx context.Context, cl *v1.BucketyClaim) (bool, error) {
	return c.letGo(ctx, cl, true)
}

func (c *Store) letGo(ctx context.Context, cl *v1.BucketyClaim, unmarked bool) (bool, error) {
	next := cl.DeepCopy()
	switch {
	case Written(cl.Spec.Phase):
		if r := cl.Spec.Retained; r != nil && r.Owner.UID == cl.Spec.Owner.UID {
			if r.RecordUnmarked || !unmarked {
				return false, nil // retained already (a deletion pass run again)
			}
			next.Spec.Retained.RecordUnmarked = true
			break
		}
		next.Spec.Retained = &v1.ClaimRetained{Since: metav1.Now(), Owner: cl.Spec.Owner, Phase: cl.Spec.Phase, RecordUnmarked: unmarked}
	case cl.Spec.Retained != nil:
		r := cl.Spec.Retained
		if r.Owner.UID == cl.Spec.Owner.UID {
			return false, nil
		}
		next.Spec.Owner, next.Spec.Phase = r.Owner, r.Phase
		if r.Backend != "" {
			// As the retained owner left them (a record made before
			// they were kept leaves the taker's).
			next.Spec.Backend, next.Spec.Service, next.Spec.Location, next.Spec.Budgeted = r.Backend, r.Service, r.Location, r.Budgeted
		}
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		next.Labels[v1.ClaimOwnerLabel] = r.Owner.UID
		next.Labels[shard.SlotLabel] = shard.SlotValue(r.Owner.Namespace)
	default:
		return true, c.Release(ctx, cl)
	}
	if err := c.Client.Update(ctx, next); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("retain claim %s (not released): %w", cl.Name, err)
	}
	// Remembered until the cache shows it: the wake that follows sends
	// the namespace's waiting Bucketies through its gate, which must count
	// a reverted claim where it counts now, not where the cache last saw
	// it (under the taker's backend, or not at all).
	c.recent.put(next)
	*cl = *next
	return false, nil
}

// UnmarkedFor is the retained record of cl that b is not handed back by
// the owner record on the backend: the resource was retained from another
// Buckety (of the same namespace and name, by that record) whose deletion
// could not mark the record retained (RecordUnmarked). Nil otherwise.
func UnmarkedFor(cl *v1.BucketyClaim, b *v1.Buckety) *v1.ClaimRetained {
	if r := cl.Spec.Retained; r != nil && r.RecordUnmarked && r.Owner.UID != string(b.UID) {
		return r
	}
	return nil
}

// RetainedUnmarked reads the claims on k fresh and returns the retained
// record b is not handed back by the owner record (UnmarkedFor), nil when
// there is none.
func (c *Store) RetainedUnmarked(ctx context.Context, b *v1.Buckety, k Key) (*v1.ClaimRetained, error) {
	for _, name := range k.names() {
		cl, err := c.Fresh(ctx, name)
		if err != nil {
			return nil, err
		}
		if cl != nil && k.covers(cl) {
			if r := UnmarkedFor(cl, b); r != nil {
				return r, nil
			}
		}
	}
	return nil, nil
}

// Fresh reads claim name from the API server; nil when there is none.
func (c *Store) Fresh(ctx context.Context, name string) (*v1.BucketyClaim, error) {
	cl := &v1.BucketyClaim{}
	if err := c.APIReader.Get(ctx, types.NamespacedName{Name: name}, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read claim %s: %w", name, err)
	}
	return cl, nil
}

// Knew reports whether a claim on k, read fresh under any of its names,
// shows this cluster held k's resource for the Buckety of UID uid: as its
// owner now, or as the owner its retained record keeps (a claim taken
// over from it, or let go by it); or shows the claims decided it for
// Buckety self since: its own claim, written (a takeover that settled
// drops the retained record before the owner record names self). A
// cluster rebuilt from Git, with its claims gone, knew none of the
// Bucketies it has not restored yet.
func (c *Store) Knew(ctx context.Context, k Key, uid, self string) (bool, error) {
	if uid == "" {
		return false, nil
	}
	for _, n := range k.names() {
		cl, err := c.Fresh(ctx, n)
		switch {
		case err != nil:
			return false, err
		case cl == nil || !k.covers(cl):
		case cl.Spec.Owner.UID == uid, cl.Spec.Retained != nil && cl.Spec.Retained.Owner.UID == uid,
			self != "" && cl.Spec.Owner.UID == self && Written(cl.Spec.Phase):
			return true, nil
		}
	}
	return false, nil
}

// RecordMarked clears spec.retained.recordUnmarked of claim cl, read
// fresh, when it is still the same retained record: its resource's owner
// record was marked retained since. An optimistic-lock update; a claim
// taken over or released meanwhile is left as it is.
func (c *Store) RecordMarked(ctx context.Context, cl *v1.BucketyClaim) error {
	cur, err := c.Fresh(ctx, cl.Name)
	if err != nil || cur == nil {
		return err
	}
	if !IsRetained(cur) || !cur.Spec.Retained.RecordUnmarked || cur.Spec.Retained.Owner.UID != cl.Spec.Retained.Owner.UID {
		return nil
	}
	cur.Spec.Retained.RecordUnmarked = false
	if err := c.Client.Update(ctx, cur); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("record on claim %s that its owner record is marked retained: %w", cl.Name, err)
	}
	return nil
}

// IsRetained reports whether a claim holds a resource retained from a
// deleted Buckety that nobody has taken over.
func IsRetained(cl *v1.BucketyClaim) bool {
	return cl.Spec.Retained != nil && cl.Spec.Retained.Owner.UID == cl.Spec.Owner.UID
}

// Held returns b's claim on k, read from the cache when fresh is false,
// from the API server otherwise; nil when b holds no such claim (nobody
// does, or another Buckety does: other is then true, as far as that read
// shows).
func (c *Store) Held(ctx context.Context, b *v1.Buckety, k Key, fresh bool) (cl *v1.BucketyClaim, other bool, err error) {
	get := c.cachedGet
	if fresh || !c.Serves.Namespace(b.Namespace) {
		get = func(ctx context.Context, name string, into *v1.BucketyClaim) error {
			return c.APIReader.Get(ctx, types.NamespacedName{Name: name}, into)
		}
	}
	for _, name := range k.names() {
		cl = &v1.BucketyClaim{}
		switch err := get(ctx, name, cl); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, false, fmt.Errorf("read claim %s: %w", name, err)
		}
		if k.mine(cl, b) {
			return cl, false, nil
		}
		other = true
	}
	return nil, other, nil
}

// Confirm reads cl fresh and fails unless it is still there, unchanged in
// owner and resource, and not released: what a backend write that may
// create a resource relies on, where cl came from a cache that may lag (a
// claim released and taken by another Buckety meanwhile).
func (c *Store) Confirm(ctx context.Context, cl *v1.BucketyClaim) error {
	cur := &v1.BucketyClaim{}
	err := c.APIReader.Get(ctx, types.NamespacedName{Name: cl.Name}, cur)
	switch {
	case apierrors.IsNotFound(err):
		return &LostError{Claim: cl.Name, Why: "it no longer exists"}
	case err != nil:
		return fmt.Errorf("confirm claim %s: %w", cl.Name, err)
	case cur.UID != cl.UID || cur.Spec.Owner.UID != cl.Spec.Owner.UID || cur.Spec.ResourceName != cl.Spec.ResourceName || cur.Spec.Backend != cl.Spec.Backend:
		return &LostError{Claim: cl.Name, Why: "it was released and claimed again"}
	}
	return nil
}

// LostError is a claim that Confirm found gone or taken since the cache
// showed it: nothing may be written to the backend on its strength.
type LostError struct {
	Claim, Why string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("claim %s is not this Buckety's any more (%s; the cache lagged): nothing was written to the backend", e.Claim, e.Why)
}

// RecordLocation records the location parameters of a claim made before
// claims recorded them (a one-time backfill), with an optimistic lock.
func (c *Store) RecordLocation(ctx context.Context, cl *v1.BucketyClaim, location map[string]string) error {
	if len(cl.Spec.Location) > 0 || len(location) == 0 {
		return nil
	}
	cl.Spec.Location = location
	if err := c.Client.Update(ctx, cl); err != nil {
		cl.Spec.Location = nil
		return fmt.Errorf("record the location of claim %s: %w", cl.Name, err)
	}
	c.recent.put(cl)
	return nil
}

// RecordOwner records on claim cl that its owner's record is on the
// resource itself (spec.ownerRecorded): written there, or read back from
// it naming the owner, on a backend that keeps its records with the
// resources. Once per claim; an optimistic-lock update, so a claim
// changed since it was read (a maintainer who cleared the field, a
// takeover) is not overwritten, and the pass tries again.
func (c *Store) RecordOwner(ctx context.Context, cl *v1.BucketyClaim) error {
	return c.setOwnerRecorded(ctx, cl, true, "that its owner record is on the resource")
}

// ForgetOwnerRecorded clears spec.ownerRecorded on claim cl: its owner
// created the resource again (the one recorded was deleted out of band),
// and the new one holds no record until its owner writes it (RecordOwner
// then). An optimistic-lock update, as RecordOwner's.
func (c *Store) ForgetOwnerRecorded(ctx context.Context, cl *v1.BucketyClaim) error {
	return c.setOwnerRecorded(ctx, cl, false, "that its resource is gone with its owner record")
}

// setOwnerRecorded writes spec.ownerRecorded as to, nothing when it is
// so already; what names the write in its error.
func (c *Store) setOwnerRecorded(ctx context.Context, cl *v1.BucketyClaim, to bool, what string) error {
	if cl.Spec.OwnerRecorded == to {
		return nil
	}
	cl.Spec.OwnerRecorded = to
	if err := c.Client.Update(ctx, cl); err != nil {
		cl.Spec.OwnerRecorded = !to
		return fmt.Errorf("record on claim %s %s: %w", cl.Name, what, err)
	}
	c.recent.put(cl)
	return nil
}

// serviceIDKey keys the service identity in a context (WithServiceID).
type serviceIDKey struct{}

// WithServiceID is ctx carrying id, the identity of the service the
// backend of the pass reaches (drivers.ServiceIdentifier), which a claim
// AcquireAs creates records (spec.serviceID): in the same write, so a
// claim costs no second one. The pass that asked the backend knows it;
// the claim's create, deep in the adoption check, is made with its
// context.
func WithServiceID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, serviceIDKey{}, id)
}

// serviceIDFrom is the identity WithServiceID put in ctx, "" for none.
func serviceIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(serviceIDKey{}).(string)
	return id
}

// RecordServiceID records on claim cl, made before claims recorded it,
// the identity of the service its resource is on (spec.serviceID): once,
// by a pass that read its owner's record there. An optimistic-lock
// update, as RecordOwner's: a claim changed since it was read (a
// maintainer who cleared the field, a takeover) is not overwritten, and
// the pass tries again.
func (c *Store) RecordServiceID(ctx context.Context, cl *v1.BucketyClaim, id string) error {
	if cl.Spec.ServiceID != "" || id == "" {
		return nil
	}
	cl.Spec.ServiceID = id
	if err := c.Client.Update(ctx, cl); err != nil {
		cl.Spec.ServiceID = ""
		return fmt.Errorf("record on claim %s the service its resource is on: %w", cl.Name, err)
	}
	c.recent.put(cl)
	return nil
}

// MarkServiceUnproven marks claim cl, without spec.serviceID, as one
// whose owner record the controller is about to write itself
// (v1.ClaimServiceUnprovenAnnotation), before the write: an
// optimistic-lock update, nothing when it is marked already.
func (c *Store) MarkServiceUnproven(ctx context.Context, cl *v1.BucketyClaim) error {
	if cl.Annotations[v1.ClaimServiceUnprovenAnnotation] == "true" {
		return nil
	}
	was := cl.Annotations
	cl.Annotations = maps.Clone(was)
	if cl.Annotations == nil {
		cl.Annotations = map[string]string{}
	}
	cl.Annotations[v1.ClaimServiceUnprovenAnnotation] = "true"
	if err := c.Client.Update(ctx, cl); err != nil {
		cl.Annotations = was
		return fmt.Errorf("mark claim %s as one whose owner record proves nothing of its service: %w", cl.Name, err)
	}
	c.recent.put(cl)
	return nil
}

// RecordBudgeted records what the claim's resource counts against its
// namespace's budget, with an optimistic lock: a claim changed since it
// was read is not overwritten, and the pass tries again.
func (c *Store) RecordBudgeted(ctx context.Context, cl *v1.BucketyClaim, b v1.Budgeted) error {
	prev := cl.Spec.Budgeted
	cl.Spec.Budgeted = &b
	if err := c.Client.Update(ctx, cl); err != nil {
		// Committed with its reply lost, the next pass through the
		// gate must count the new figure, not the old.
		owner := cl.Spec.Owner.UID
		if cur := c.committed(ctx, cl.Name, err, func(cur *v1.BucketyClaim) bool {
			return cur.Spec.Owner.UID == owner && cur.Spec.Budgeted != nil && *cur.Spec.Budgeted == b
		}); cur != nil {
			*cl = *cur
			return nil
		}
		cl.Spec.Budgeted = prev
		return fmt.Errorf("record the budget of claim %s: %w", cl.Name, err)
	}
	c.recent.put(cl)
	return nil
}

// committed reads claim name fresh after a write of it failed with err,
// and returns it (noted as this store's own write) when wrote says the
// write took effect all the same: an answer lost on its way back (a
// timeout, a connection cut, the API server stopping mid-request). A
// refusal the API server answered (a conflict, an invalid object, a
// forbidden write) changed nothing and is not read again.
func (c *Store) committed(ctx context.Context, name string, err error, wrote func(*v1.BucketyClaim) bool) *v1.BucketyClaim {
	if apierrors.IsConflict(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.IsBadRequest(err) {
		return nil
	}
	cur, ferr := c.Fresh(ctx, name)
	if ferr != nil || cur == nil || !wrote(cur) {
		return nil
	}
	c.recent.put(cur)
	return cur
}

// MarkOwnerGone stamps status.ownerGoneSince on a claim whose owner the
// caller found gone (read fresh), once.
func (c *Store) MarkOwnerGone(ctx context.Context, cl *v1.BucketyClaim, now metav1.Time) error {
	if cl.Status.OwnerGoneSince != nil {
		return nil
	}
	before := cl.DeepCopy()
	cl.Status.OwnerGoneSince = &now
	if err := c.Client.Status().Patch(ctx, cl, ctrl.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("mark claim %s: %w", cl.Name, err)
	}
	return nil
}

// ClearOwnerGone removes status.ownerGoneSince from a claim taken over by
// a new owner.
func (c *Store) ClearOwnerGone(ctx context.Context, cl *v1.BucketyClaim) error {
	if cl.Status.OwnerGoneSince == nil {
		return nil
	}
	before := cl.DeepCopy()
	cl.Status.OwnerGoneSince = nil
	if err := c.Client.Status().Patch(ctx, cl, ctrl.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clear the owner-gone stamp of claim %s: %w", cl.Name, err)
	}
	return nil
}

// OwnerExists reads the claim's owner fresh: a claim is stale only when no
// Buckety with its UID exists.
func (c *Store) OwnerExists(ctx context.Context, cl *v1.BucketyClaim) (bool, error) {
	return c.ownerExists(ctx, cl)
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
// changed by anyone else meanwhile is never overwritten. A claim taken
// over keeps the retained record it took the resource from until its new
// owner has written to the resource: an adoption that settles (Adopted)
// drops it here, a create only once it has succeeded (CreateSucceeded),
// since Created is recorded before the create, which may fail or never
// run. A create that finds the resource there after all (Created or
// Creating moved to Adopting) drops it too: the check that recorded
// Created found the retained resource missing, so the one there now was
// made by someone else, and the record must not vouch for it (on a
// backend that keeps no owner records, an empty resource a retained
// claim vouches for is adopted without the adoption keys).
func (c *Store) Advance(ctx context.Context, cl *v1.BucketyClaim, phase v1.ClaimPhase) error {
	if cl.Spec.Phase == phase {
		return nil
	}
	prev, retained, recorded := cl.Spec.Phase, cl.Spec.Retained, cl.Spec.OwnerRecorded
	cl.Spec.Phase = phase
	if phase == v1.ClaimClaimed || phase == v1.ClaimAdopting {
		// The resource the claim goes on to is decided again (a create
		// refused: the recorded one is gone; one found there after all,
		// or one being adopted: not the one recorded): its record is
		// written, and recorded, once the owner holds it.
		cl.Spec.OwnerRecorded = false
	}
	foundThere := phase == v1.ClaimAdopting && (prev == v1.ClaimCreated || prev == v1.ClaimCreating)
	if (phase == v1.ClaimAdopted || foundThere) && retained != nil && retained.Owner.UID != cl.Spec.Owner.UID {
		// The new owner holds the resource now (or the one it found is
		// not the retained one): it counts as its own.
		cl.Spec.Retained = nil
	}
	if err := c.Client.Update(ctx, cl); err != nil {
		cl.Spec.Phase, cl.Spec.Retained, cl.Spec.OwnerRecorded = prev, retained, recorded
		return fmt.Errorf("record claim %s as %s: %w", cl.Name, phase, err)
	}
	c.recent.put(cl)
	return nil
}

// CreateSucceeded records that the create a Created claim was recorded
// for has succeeded (or that a later pass found the resource it made):
// the retained record the claim kept from the Buckety it was taken over
// from is dropped, since the resource is its new owner's own now. Until
// then the record stays: a create refused (the claim Claimed again), one
// that got no answer, or a process stopped between the claim and the
// create leaves the claim as the takeover made it, so the next pass
// judges the name as this one did (Knew), and a takeover given up
// reverts to the record (LetGo) instead of freeing the name. An
// optimistic-lock update.
func (c *Store) CreateSucceeded(ctx context.Context, cl *v1.BucketyClaim) error {
	retained := cl.Spec.Retained
	if retained == nil || retained.Owner.UID == cl.Spec.Owner.UID || (cl.Spec.Phase != v1.ClaimCreated && cl.Spec.Phase != v1.ClaimCreating) {
		return nil
	}
	cl.Spec.Retained = nil
	if err := c.Client.Update(ctx, cl); err != nil {
		cl.Spec.Retained = retained
		return fmt.Errorf("record on claim %s that its resource is created: %w", cl.Name, err)
	}
	c.recent.put(cl)
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

// OwnedBy lists Buckety b's claims for an access that uses it: from the
// cache (OwnedCached) when this shard serves b's namespace, and otherwise
// from the API server (Owned), since only b's shard caches its claims.
func (c *Store) OwnedBy(ctx context.Context, b *v1.Buckety) ([]v1.BucketyClaim, error) {
	if c.Serves.Namespace(b.Namespace) {
		return c.OwnedCached(ctx, b.UID)
	}
	return c.Owned(ctx, b.UID)
}

// OwnedCached lists b's claims from the cache (steady state), with the
// claims this store wrote that the cache does not show yet.
func (c *Store) OwnedCached(ctx context.Context, uid types.UID) ([]v1.BucketyClaim, error) {
	var list v1.BucketyClaimList
	if err := c.Client.List(ctx, &list, ctrl.MatchingFields{objects.IndexClaimOwner: string(uid)}); err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	return c.withRecent(list.Items, c.recent.owned(uid)), nil
}

// InNamespace lists the claims of namespace ns on backend from the cache,
// with the claims this store wrote that the cache does not show yet: what
// a namespace's limits count. The cache alone may lag a claim the last
// pass through the namespace's gate wrote (that pass waits a few seconds
// at most for the cache to show it). The items are the cache's own (or
// copies of what this store wrote): read them, never write them.
func (c *Store) InNamespace(ctx context.Context, backend, ns string) ([]v1.BucketyClaim, error) {
	var list v1.BucketyClaimList
	if err := c.Client.List(ctx, &list, ctrl.MatchingFields{objects.IndexClaimBackendNamespace: objects.BackendNamespace(backend, ns)}, ctrl.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return c.withRecent(list.Items, c.recent.matching(func(cl *v1.BucketyClaim) bool {
		return cl.Spec.Backend == backend && cl.Spec.Owner.Namespace == ns
	})), nil
}

// withRecent is items, from the cache, with the claims named that this
// store wrote and the cache shows older or not at all.
func (c *Store) withRecent(items []v1.BucketyClaim, names []string) []v1.BucketyClaim {
	for _, name := range names {
		i := slices.IndexFunc(items, func(cl v1.BucketyClaim) bool { return cl.Name == name })
		var cached *v1.BucketyClaim
		if i >= 0 {
			cached = &items[i]
		}
		switch mine := c.recent.newer(name, cached); {
		case mine == nil:
		case i >= 0:
			items[i] = *mine
		default:
			items = append(items, *mine)
		}
	}
	return items
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
	case err == nil:
		c.recent.drop(cl.Name)
	case apierrors.IsNotFound(err):
		c.recent.drop(cl.Name)
		return nil
	case apierrors.IsConflict(err):
		return fmt.Errorf("claim %s changed since it was read (not released): %w", cl.Name, err)
	}
	return err
}

func (c *Store) delete(ctx context.Context, cl *v1.BucketyClaim) error {
	uid := cl.UID
	err := c.Client.Delete(ctx, cl, ctrl.Preconditions{UID: &uid})
	if err == nil || apierrors.IsNotFound(err) {
		c.recent.drop(cl.Name)
	}
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
