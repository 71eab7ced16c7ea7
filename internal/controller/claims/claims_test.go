package claims

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// newClient is a fake client holding objs that, as an API server does and
// the fake client does not, gives every object it creates a new UID and
// refuses a delete whose UID precondition does not match.
func newClient(t *testing.T, objs ...client.Object) client.WithWatch {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...)
	if err := objects.SetupIndexes(context.Background(), builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(b.Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if obj.GetUID() == "" {
				obj.SetUID(types.UID(fmt.Sprintf("uid-%d", n.Add(1))))
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			var o client.DeleteOptions
			o.ApplyOptions(opts)
			if o.Preconditions != nil && o.Preconditions.UID != nil {
				cur := obj.DeepCopyObject().(client.Object)
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				if cur.GetUID() != *o.Preconditions.UID {
					return apierrors.NewConflict(v1.GroupVersion.WithResource("bucketyclaims").GroupResource(), obj.GetName(),
						fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *o.Preconditions.UID, cur.GetUID()))
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
}

// builderIndexer registers the reconcilers' field indexes on a fake
// client builder, as the manager does on its cache.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, f client.IndexerFunc) error {
	i.b.WithIndex(obj, field, f)
	return nil
}

// buckety builds a Buckety with a UID, as the API server would give it.
func buckety(ns, name string) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name + "-uid")}}
}

// claimOf builds the claim on resource held by owner (namespace/name/UID).
func claimOf(backend, resource, ownerNS, ownerName, ownerUID string, phase v1.ClaimPhase) *v1.BucketyClaim {
	return &v1.BucketyClaim{
		ObjectMeta: metav1.ObjectMeta{Name: Name(backend, resource), Labels: map[string]string{v1.ClaimOwnerLabel: ownerUID}},
		Spec: v1.BucketyClaimSpec{Backend: backend, ResourceName: resource, Phase: phase,
			Owner: v1.ClaimOwner{Namespace: ownerNS, Name: ownerName, UID: ownerUID}},
	}
}

// retainedBy marks cl retained from its owner, as LetGo does.
func retainedBy(cl *v1.BucketyClaim) *v1.BucketyClaim {
	cl.Spec.Retained = &v1.ClaimRetained{Since: metav1.Now(), Owner: cl.Spec.Owner, Phase: cl.Spec.Phase}
	return cl
}

func getClaim(t *testing.T, c client.Reader, backend, resource string) *v1.BucketyClaim {
	t.Helper()
	cl := &v1.BucketyClaim{}
	if err := c.Get(context.Background(), types.NamespacedName{Name: Name(backend, resource)}, cl); err != nil {
		t.Fatalf("read claim on %s: %v", resource, err)
	}
	return cl
}

func TestDeletable(t *testing.T) {
	for _, c := range []struct {
		phase         v1.ClaimPhase
		deleteAdopted bool
		want          bool
	}{
		{v1.ClaimClaimed, true, false},
		{v1.ClaimCreating, false, true},
		{v1.ClaimCreated, false, true},
		{v1.ClaimAdopting, true, false},
		{v1.ClaimAdopted, false, false},
		{v1.ClaimAdopted, true, true},
	} {
		cl := &v1.BucketyClaim{Spec: v1.BucketyClaimSpec{Phase: c.phase}}
		if got := Deletable(cl, c.deleteAdopted); got != c.want {
			t.Errorf("%s with deleteAdopted=%v: want %v, got %v", c.phase, c.deleteAdopted, c.want, got)
		}
	}
}

// TestConcurrentAcquisitionHasOneWinner: two Bucketies acquire one
// resource at once, both having read no claim (each Acquire's first, cached
// read is held until both have made it, so both go on to create). Exactly
// one gets the claim; the other gets a Conflict naming the winner, and no
// error: the API server's refusal of a second object of the same name is
// the lock.
func TestConcurrentAcquisitionHasOneWinner(t *testing.T) {
	for round := range 20 {
		a, b := buckety("team-a", "orders"), buckety("team-b", "orders")
		base := newClient(t, a, b)
		var arrived sync.WaitGroup
		arrived.Add(2)
		var first sync.Map
		c := interceptor.NewClient(base, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				err := c.Get(ctx, key, obj, opts...)
				if _, ok := obj.(*v1.BucketyClaim); ok {
					if _, seen := first.LoadOrStore(ctx.Value(ownerKey{}), true); !seen {
						arrived.Done()
						arrived.Wait()
					}
				}
				return err
			},
		})
		store := &Store{Client: c, APIReader: base}
		type result struct {
			b        *v1.Buckety
			cl       *v1.BucketyClaim
			conflict *Conflict
			err      error
		}
		results := make([]result, 2)
		var done sync.WaitGroup
		for i, who := range []*v1.Buckety{a, b} {
			done.Add(1)
			go func() {
				defer done.Done()
				ctx := context.WithValue(context.Background(), ownerKey{}, who.Namespace)
				cl, conflict, err := store.Acquire(ctx, who, Key{Backend: "kafka", Resource: "orders"})
				results[i] = result{who, cl, conflict, err}
			}()
		}
		done.Wait()
		var winners, losers []result
		for _, r := range results {
			switch {
			case r.err != nil:
				t.Fatalf("round %d: %s/%s: want a claim or a conflict, got error %v", round, r.b.Namespace, r.b.Name, r.err)
			case r.cl != nil && r.conflict == nil:
				winners = append(winners, r)
			case r.cl == nil && r.conflict != nil:
				losers = append(losers, r)
			default:
				t.Fatalf("round %d: %s/%s: want a claim or a conflict, got %+v and %+v", round, r.b.Namespace, r.b.Name, r.cl, r.conflict)
			}
		}
		if len(winners) != 1 || len(losers) != 1 {
			t.Fatalf("round %d: want one winner and one conflict, got %d winners and %d conflicts", round, len(winners), len(losers))
		}
		w, l := winners[0], losers[0]
		if want := w.b.Namespace + "/" + w.b.Name; l.conflict.Owner != want {
			t.Errorf("round %d: want the conflict to name the winner %s, got %q", round, want, l.conflict.Owner)
		}
		if got := getClaim(t, base, "kafka", "orders"); got.Spec.Owner.UID != string(w.b.UID) || got.Spec.Phase != v1.ClaimClaimed {
			t.Errorf("round %d: want the claim held by the winner %s, Claimed; got owner %s, %s", round, w.b.UID, got.Spec.Owner.UID, got.Spec.Phase)
		}
	}
}

// ownerKey tells TestConcurrentAcquisitionHasOneWinner's reads apart.
type ownerKey struct{}

// TestStaleClaimIsTakenOver: a claim whose owner no longer exists (a
// Buckety force-deleted without its finalizer, or deleted and re-created
// under the same name, so with another UID) is removed and the resource
// claimed anew, in phase Claimed so the adoption check runs again. A claim
// whose owner exists is not.
func TestStaleClaimIsTakenOver(t *testing.T) {
	heir := buckety("team", "heir")
	recreated := buckety("old", "orders")
	recreated.UID = "new-uid"
	live := buckety("live", "orders")
	for _, c := range []struct {
		name     string
		existing *v1.BucketyClaim
		takeOver bool
	}{
		{"owner deleted", claimOf("kafka", "orders", "gone", "ghost", "ghost-uid", v1.ClaimCreated), true},
		{"owner re-created with another UID", claimOf("kafka", "orders", "old", "orders", "old-uid", v1.ClaimCreated), true},
		{"owner exists", claimOf("kafka", "orders", "live", "orders", string(live.UID), v1.ClaimCreated), false},
		// Let go by an owner that still exists: its deletion pass (with
		// Retain) lets go before it removes the finalizer, and a renamed
		// Buckety lets go of its old name for good. Waiting for the owner
		// to be gone lost the waiter's wake (CI, TestReleaseWakesOnlyItsWaiters).
		{"owner exists, claim retained (let go)", retainedBy(claimOf("kafka", "orders", "live", "orders", string(live.UID), v1.ClaimCreated)), true},
	} {
		base := newClient(t, heir, recreated, live, c.existing)
		store := &Store{Client: base, APIReader: base}
		cl, conflict, err := store.Acquire(context.Background(), heir, Key{Backend: "kafka", Resource: "orders"})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := getClaim(t, base, "kafka", "orders")
		if !c.takeOver {
			if cl != nil || conflict == nil || conflict.Owner != "live/orders" || conflict.Phase != v1.ClaimCreated {
				t.Errorf("%s: want a conflict naming live/orders (Created), got claim %v, conflict %+v", c.name, cl, conflict)
			}
			if got.Spec.Owner.UID != string(live.UID) {
				t.Errorf("%s: want the live owner's claim kept, got owner %s", c.name, got.Spec.Owner.UID)
			}
			continue
		}
		if conflict != nil || cl == nil {
			t.Fatalf("%s: want the claim taken over, got conflict %+v", c.name, conflict)
		}
		if got.Spec.Owner.UID != string(heir.UID) || got.Labels[v1.ClaimOwnerLabel] != string(heir.UID) || got.Spec.Phase != v1.ClaimClaimed {
			t.Errorf("%s: want the claim held by %s in phase Claimed, got owner %s (label %s), %s", c.name, heir.UID, got.Spec.Owner.UID, got.Labels[v1.ClaimOwnerLabel], got.Spec.Phase)
		}
	}
}

// TestClaimForAnotherResourceIsRefused: a claim named as the claim on a
// resource but recording another resource or backend (a hash collision,
// or a claim made by hand) is never shared, taken over or removed, whoever
// it names as owner: Acquire fails and the claim stays as it was.
func TestClaimForAnotherResourceIsRefused(t *testing.T) {
	b, live := buckety("team", "orders"), buckety("live", "other")
	for _, c := range []struct {
		name           string
		backend, rname string
		owner          *v1.Buckety
		ownerUID       string
	}{
		{"another resource, live owner", "kafka", "other", live, string(live.UID)},
		{"another resource, deleted owner", "kafka", "other", &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "gone", Name: "ghost"}}, "ghost-uid"},
		{"another resource, same owner", "kafka", "other", b, string(b.UID)},
		{"another backend", "s3", "orders", live, string(live.UID)},
	} {
		hand := claimOf(c.backend, c.rname, c.owner.Namespace, c.owner.Name, c.ownerUID, v1.ClaimCreated)
		hand.Name = Name("kafka", "orders")
		base := newClient(t, b, live, hand)
		store := &Store{Client: base, APIReader: base}
		before := getClaim(t, base, "kafka", "orders")
		cl, conflict, err := store.Acquire(context.Background(), b, Key{Backend: "kafka", Resource: "orders"})
		if err == nil || !strings.Contains(err.Error(), "refusing to share it") {
			t.Errorf("%s: want Acquire refused with an error, got claim %v, conflict %+v, error %v", c.name, cl, conflict, err)
		}
		if cl != nil || conflict != nil {
			t.Errorf("%s: want neither a claim nor a conflict, got %v and %+v", c.name, cl, conflict)
		}
		after := getClaim(t, base, "kafka", "orders")
		if after.UID != before.UID || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s: want the claim untouched, got it replaced or changed (uid %s -> %s, rv %s -> %s)", c.name, before.UID, after.UID, before.ResourceVersion, after.ResourceVersion)
		}
	}
}

// TestReleaseRefusesStaleRead: a claim read before it advanced (a cache
// that lags: Claimed there, Created on the API server) is not released on
// that read, nor is a claim read before it was released and taken by
// another Buckety; the claim read as it is now is.
func TestReleaseRefusesStaleRead(t *testing.T) {
	c := newClient(t)
	claims := &Store{Client: c, APIReader: c}
	ctx := context.Background()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "team", UID: "uid-1"}}
	cl, conflict, err := claims.Acquire(ctx, b, Key{Backend: "kafka", Resource: "team.orders"})
	if err != nil || conflict != nil {
		t.Fatalf("acquire: %v %v", err, conflict)
	}
	stale := cl.DeepCopy()
	for _, p := range []v1.ClaimPhase{v1.ClaimCreating, v1.ClaimCreated} {
		if err := claims.Advance(ctx, cl, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := claims.Release(ctx, stale); err == nil || !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Errorf("release of the claim as read while Claimed: want a conflict, got %v", err)
	}
	cur := &v1.BucketyClaim{}
	if err := c.Get(ctx, types.NamespacedName{Name: cl.Name}, cur); err != nil || cur.Spec.Phase != v1.ClaimCreated {
		t.Fatalf("want the Created claim kept, got %v %v", cur.Spec.Phase, err)
	}
	if err := claims.Release(ctx, cur); err != nil {
		t.Errorf("release of the claim as it is: %v", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Name: cl.Name}, cur); !apierrors.IsNotFound(err) {
		t.Errorf("want the claim released, got %v", err)
	}
	if err := claims.Release(ctx, cur); err != nil {
		t.Errorf("release of a claim already gone: want nil, got %v", err)
	}

	// Released, then claimed by another Buckety under the same name: the
	// first owner's copy (another UID) does not release the new claim.
	other := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "other", UID: "uid-2"}}
	taken, conflict, err := claims.Acquire(ctx, other, Key{Backend: "kafka", Resource: "team.orders"})
	if err != nil || conflict != nil {
		t.Fatalf("acquire by another Buckety: %v %v", err, conflict)
	}
	old := cl.DeepCopy()
	old.ResourceVersion = taken.ResourceVersion // only the UID tells them apart
	if err := claims.Release(ctx, old); err == nil {
		t.Error("release of the first owner's claim after another Buckety took the name: want a conflict, got nil")
	}
	if got := getClaim(t, c, "kafka", "team.orders"); got.Spec.Owner.UID != "uid-2" {
		t.Errorf("want the new owner's claim kept, got owner %s", got.Spec.Owner.UID)
	}
}

// laggingCache is a client whose reads come from a cache that shows only
// what was there when it was frozen, as an informer that has not delivered
// the latest writes yet; writes go to the API server.
type laggingCache struct {
	client.Client
	cache client.Reader
}

func (l laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return l.cache.Get(ctx, key, obj, opts...)
}

func (l laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return l.cache.List(ctx, list, opts...)
}

// TestClaimsReadTheirOwnWrites: the pass after the one that wrote a claim
// reads claims from a cache whose claim watch may not have delivered that
// write; the store answers with what it wrote, so that pass neither
// inspects the backend nor tries the create again. Once the cache catches
// up, or the claim is released, it answers from the cache alone.
func TestClaimsReadTheirOwnWrites(t *testing.T) {
	ctx := context.Background()
	api := newClient(t)
	s := &Store{Client: laggingCache{Client: api, cache: newClient(t)}, APIReader: api}
	b := buckety("a", "orders")
	k := Key{Backend: "kafka", Resource: "orders"}
	cl, created, conflict, err := s.AcquireAs(ctx, b, k, v1.ClaimCreated, nil, nil)
	if err != nil || conflict != nil || !created {
		t.Fatalf("acquire: created %v, conflict %v, err %v", created, conflict, err)
	}
	owned, err := s.OwnedCached(ctx, b.UID)
	if err != nil || len(owned) != 1 || owned[0].Name != cl.Name || owned[0].Spec.Phase != v1.ClaimCreated {
		t.Fatalf("want the claim just written listed although the cache lags, got %v (%v)", owned, err)
	}
	if got, other, err := s.Held(ctx, b, k, false); err != nil || other || got == nil || got.UID != cl.UID {
		t.Fatalf("want Held to find the claim just written, got %v, other %v, err %v", got, other, err)
	}
	again, created, _, err := s.AcquireAs(ctx, b, k, v1.ClaimCreated, nil, nil)
	if err != nil || created || again.UID != cl.UID {
		t.Fatalf("want the claim just written returned, not created again: created %v, err %v", created, err)
	}
	if err := s.Advance(ctx, cl, v1.ClaimAdopting); err != nil {
		t.Fatal(err)
	}
	if owned, _ := s.OwnedCached(ctx, b.UID); len(owned) != 1 || owned[0].Spec.Phase != v1.ClaimAdopting {
		t.Fatalf("want the update just written shown, got %v", owned)
	}
	// Another Buckety's view is unchanged: only the owner's claims merge.
	if owned, _ := s.OwnedCached(ctx, buckety("a", "other").UID); len(owned) != 0 {
		t.Fatalf("want no claim for another owner, got %v", owned)
	}
	// The cache catches up: it is believed again.
	s.Client = laggingCache{Client: api, cache: api}
	if owned, _ := s.OwnedCached(ctx, b.UID); len(owned) != 1 || owned[0].Spec.Phase != v1.ClaimAdopting {
		t.Fatalf("want the claim from the caught-up cache, got %v", owned)
	}
	if err := s.Release(ctx, cl); err != nil {
		t.Fatal(err)
	}
	s.Client = laggingCache{Client: api, cache: newClient(t)}
	if owned, _ := s.OwnedCached(ctx, b.UID); len(owned) != 0 {
		t.Fatalf("want a released claim forgotten, got %v", owned)
	}
}

// TestLetGoKeepsWhatStays (issue 50, 3): a claim whose owner wrote to its
// resource is kept, retained from that owner; a takeover of it that never
// wrote reverts to that record, whoever takes it; a claim nobody wrote
// to is released; a takeover that writes holds the resource as its own.
func TestLetGoKeepsWhatStays(t *testing.T) {
	ctx := context.Background()
	gone := claimOf("kafka", "orders", "team", "orders", "gone-uid", v1.ClaimCreated)
	heir := buckety("other", "grab")
	api := newClient(t, heir, gone)
	s := &Store{Client: api, APIReader: api}
	cl := getClaim(t, api, "kafka", "orders")
	if released, err := s.LetGo(ctx, cl); err != nil || released {
		t.Fatalf("a Created claim: want it kept, got released %v, %v", released, err)
	}
	cl = getClaim(t, api, "kafka", "orders")
	if !IsRetained(cl) || cl.Spec.Retained.Owner.Namespace != "team" || cl.Spec.Retained.Phase != v1.ClaimCreated {
		t.Fatalf("want it retained from team/orders (Created), got %+v", cl.Spec)
	}
	// Another namespace's Buckety takes it over (its owner is gone), and
	// is refused: the count goes back to team.
	taken, conflict, err := s.Acquire(ctx, heir, Key{Backend: "kafka", Resource: "orders"})
	if err != nil || conflict != nil || taken == nil || taken.Spec.Owner.UID != string(heir.UID) || taken.Spec.Retained == nil || IsRetained(taken) {
		t.Fatalf("want it taken over in place, the record kept, got %+v, %v, %v", taken, conflict, err)
	}
	if released, err := s.LetGo(ctx, taken); err != nil || released {
		t.Fatalf("a takeover never written to: want it reverted, got released %v, %v", released, err)
	}
	cl = getClaim(t, api, "kafka", "orders")
	if !IsRetained(cl) || cl.Spec.Owner.Namespace != "team" || cl.Labels[v1.ClaimOwnerLabel] != "gone-uid" || cl.Spec.Phase != v1.ClaimCreated {
		t.Fatalf("want it reverted to team/orders' retained claim, got %+v %v", cl.Spec, cl.Labels)
	}
	// Taken over again and settled: the heir's own, no longer retained.
	taken, _, err = s.Acquire(ctx, heir, Key{Backend: "kafka", Resource: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Advance(ctx, taken, v1.ClaimAdopted); err != nil {
		t.Fatal(err)
	}
	if cl = getClaim(t, api, "kafka", "orders"); cl.Spec.Retained != nil || cl.Spec.Owner.UID != string(heir.UID) {
		t.Fatalf("want the settled takeover the heir's own, got %+v", cl.Spec)
	}
	// A claim nobody wrote to is released.
	fresh := claimOf("kafka", "new", "team", "new", "new-uid", v1.ClaimClaimed)
	if err := api.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if released, err := s.LetGo(ctx, getClaim(t, api, "kafka", "new")); err != nil || !released {
		t.Fatalf("a Claimed claim: want it released, got %v, %v", released, err)
	}
}

// TestRevertRestoresWhatItCounted: a takeover of a retained claim through
// a sibling backend, with no location and a footprint of its own, refused
// before it wrote, reverts the claim to what it counted: the backend,
// service, location and budget of the Buckety it was retained from. And
// the namespace's gate counts the reverted claim there at once, on a
// cache that has not seen the revert.
func TestRevertRestoresWhatItCounted(t *testing.T) {
	ctx := context.Background()
	gone := claimOf("kafka", "orders", "team", "orders", "gone-uid", v1.ClaimCreated)
	gone.Spec.Backend, gone.Spec.Service = "kafka-b", "kafka"
	gone.Spec.Location = map[string]string{"jurisdiction": "eu"}
	gone.Spec.Budgeted = &v1.Budgeted{Partitions: 3}
	heir := buckety("other", "grab")
	api := newClient(t, heir, retainedBy(gone))
	s := &Store{Client: laggingCache{Client: api, cache: newClient(t)}, APIReader: api}
	k := Key{Backend: "kafka", Service: "kafka", Resource: "orders", Siblings: []string{"kafka", "kafka-b"}}
	taken, _, conflict, err := s.AcquireAs(ctx, heir, k, v1.ClaimClaimed, nil, &v1.Budgeted{Partitions: 100})
	if err != nil || conflict != nil || taken == nil || taken.Spec.Backend != "kafka" || taken.Spec.Budgeted.Partitions != 100 {
		t.Fatalf("want it taken over through kafka with the heir's footprint, got %+v, %v, %v", taken, conflict, err)
	}
	if released, err := s.LetGo(ctx, taken); err != nil || released {
		t.Fatalf("a takeover never written to: want it reverted, got released %v, %v", released, err)
	}
	cl := getClaim(t, api, "kafka", "orders")
	if cl.Spec.Owner.UID != "gone-uid" || cl.Spec.Backend != "kafka-b" || cl.Spec.Service != "kafka" ||
		!maps.Equal(cl.Spec.Location, gone.Spec.Location) || cl.Spec.Budgeted == nil || *cl.Spec.Budgeted != *gone.Spec.Budgeted {
		t.Fatalf("want it reverted to team/orders' claim through kafka-b (jurisdiction eu, 3 partitions), got %+v", cl.Spec)
	}
	if got, err := s.InNamespace(ctx, "kafka-b", "team"); err != nil || len(got) != 1 || got[0].Spec.Budgeted.Partitions != 3 {
		t.Errorf("team on kafka-b, the cache not showing the revert: want the reverted claim counted (3 partitions), got %+v, %v", got, err)
	}
	if got, err := s.InNamespace(ctx, "kafka", "other"); err != nil || len(got) != 0 {
		t.Errorf("the heir's namespace on kafka: want nothing counted, got %+v, %v", got, err)
	}
}

// TestInNamespaceCountsOwnWrites: what a namespace's limits count includes
// the claims this store wrote that the cache does not show yet, so the
// gate's next pass cannot count past them when the cache lags longer
// than the gate waits.
func TestInNamespaceCountsOwnWrites(t *testing.T) {
	ctx := context.Background()
	api := newClient(t)
	s := &Store{Client: laggingCache{Client: api, cache: newClient(t)}, APIReader: api}
	if _, _, _, err := s.AcquireAs(ctx, buckety("team", "a"), Key{Backend: "kafka", Resource: "team.a"}, v1.ClaimCreated, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.AcquireAs(ctx, buckety("other", "b"), Key{Backend: "kafka", Resource: "other.b"}, v1.ClaimCreated, nil, nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.InNamespace(ctx, "kafka", "team")
	if err != nil || len(got) != 1 || got[0].Spec.ResourceName != "team.a" {
		t.Fatalf("want team's one claim, written and not yet cached, got %v (%v)", got, err)
	}
}

// TestTakeOverThroughASibling: a claim made through one backend of a
// service (kafka-b), whose owner is gone, taken over by a Buckety that
// names another (kafka), is that Buckety's: it records the backend the
// Buckety names, so its next pass finds it its own, not a conflict with
// itself.
func TestTakeOverThroughASibling(t *testing.T) {
	ctx := context.Background()
	heir := buckety("alice", "reclaim")
	stale := claimOf("kafka", "orders", "mallory", "grab", "gone-uid", v1.ClaimCreated)
	stale.Spec.Backend, stale.Spec.Service = "kafka-b", "kafka"
	api := newClient(t, heir, stale)
	s := &Store{Client: api, APIReader: api}
	k := Key{Backend: "kafka", Service: "kafka", Resource: "orders", Siblings: []string{"kafka", "kafka-b"}}
	if _, conflict, err := s.Acquire(ctx, heir, k); err != nil || conflict != nil {
		t.Fatalf("want it taken over, got conflict %+v, %v", conflict, err)
	}
	mine, other, err := s.Held(ctx, heir, k, true)
	if err != nil || mine == nil || other || mine.Spec.Backend != "kafka" {
		t.Fatalf("want the claim the heir's own through kafka, got %+v, other %v, %v", mine, other, err)
	}
}

// lostReplies is a client whose creates and updates of claims are
// committed but answered with an error, as when the API server stops
// mid-request: the caller cannot tell from the answer that they happened.
func lostReplies(t *testing.T, api client.WithWatch) client.WithWatch {
	t.Helper()
	lost := errors.New("http2: client connection lost")
	return interceptor.NewClient(api, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			return lost
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			return lost
		},
	})
}

// TestLostReplyStillCounts: a claim create, and the growth of what a
// claim counts against its namespace's budget, committed with the reply
// lost are found by a fresh read and counted as this store's own writes,
// so the namespace's next pass through its gate, on a cache that does not
// show them yet, counts them: a namespace at its limit cannot take one
// more resource (or more budget) in the gap.
func TestLostReplyStillCounts(t *testing.T) {
	ctx := context.Background()
	api := newClient(t)
	s := &Store{Client: laggingCache{Client: lostReplies(t, api), cache: newClient(t)}, APIReader: api}
	b := buckety("team", "a")
	k := Key{Backend: "kafka", Resource: "team.a"}
	cl, created, conflict, err := s.AcquireAs(ctx, b, k, v1.ClaimCreated, nil, &v1.Budgeted{Partitions: 1})
	if err != nil || conflict != nil || !created || cl == nil || cl.Spec.Owner.UID != string(b.UID) {
		t.Fatalf("a create committed with its reply lost: want the claim returned as created, got %v, created %v, conflict %v, err %v", cl, created, conflict, err)
	}
	got, err := s.InNamespace(ctx, "kafka", "team")
	if err != nil || len(got) != 1 || got[0].Spec.Budgeted == nil || got[0].Spec.Budgeted.Partitions != 1 {
		t.Fatalf("want the claim counted although the cache lags, got %v (%v)", got, err)
	}
	if err := s.RecordBudgeted(ctx, cl, v1.Budgeted{Partitions: 8}); err != nil {
		t.Fatalf("a growth committed with its reply lost: want it taken as written, got %v", err)
	}
	if cl.Spec.Budgeted == nil || cl.Spec.Budgeted.Partitions != 8 {
		t.Fatalf("want the claim as the server holds it, got %+v", cl.Spec.Budgeted)
	}
	got, err = s.InNamespace(ctx, "kafka", "team")
	if err != nil || len(got) != 1 || got[0].Spec.Budgeted == nil || got[0].Spec.Budgeted.Partitions != 8 {
		t.Fatalf("want the grown figure counted although the cache lags, got %v (%v)", got, err)
	}

	// A create the API server refused is not taken for done.
	refusing := interceptor.NewClient(api, interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return errors.New("http2: client connection lost")
		},
	})
	s = &Store{Client: laggingCache{Client: refusing, cache: newClient(t)}, APIReader: api}
	if cl, _, _, err := s.AcquireAs(ctx, buckety("team", "b"), Key{Backend: "kafka", Resource: "team.b"}, v1.ClaimCreated, nil, nil); err == nil || cl != nil {
		t.Fatalf("a create that never reached the server: want its error, got %v, %v", cl, err)
	}
}

// TestKnew: a claim shows this cluster knew a Buckety as its owner, or as
// the owner its retained record keeps after a takeover; a cluster with no
// claim on the resource, or one for another resource, knew nobody.
func TestKnew(t *testing.T) {
	ctx := context.Background()
	gone := claimOf("kafka", "orders", "team", "orders", "gone-uid", v1.ClaimCreated)
	heir := buckety("other", "grab")
	api := newClient(t, heir, gone)
	s := &Store{Client: api, APIReader: api}
	k := Key{Backend: "kafka", Resource: "orders"}
	knew := func(what string, k Key, uid string, want bool) {
		t.Helper()
		got, err := s.Knew(ctx, k, uid, string(heir.UID))
		if err != nil || got != want {
			t.Errorf("%s: want %v, got %v (%v)", what, want, got, err)
		}
	}
	knew("the owner of the claim", k, "gone-uid", true)
	knew("a Buckety that never held it", k, "other-uid", false)
	knew("no UID", k, "", false)
	knew("another resource's key", Key{Backend: "kafka", Resource: "payments"}, "gone-uid", false)
	if _, conflict, err := s.Acquire(ctx, heir, k); err != nil || conflict != nil {
		t.Fatalf("take over: %v %v", conflict, err)
	}
	knew("the owner a taken-over claim keeps retained", k, "gone-uid", true)
	knew("the heir", k, string(heir.UID), true)
	// Settled: the retained record goes, the heir's own written claim
	// shows the claims decided it.
	taken := getClaim(t, api, "kafka", "orders")
	if err := s.Advance(ctx, taken, v1.ClaimAdopted); err != nil {
		t.Fatal(err)
	}
	knew("the owner after the heir settled its takeover", k, "gone-uid", true)
	if got, err := s.Knew(ctx, k, "gone-uid", "someone-else"); err != nil || got {
		t.Errorf("asked for another Buckety than the settled heir: want false, got %v (%v)", got, err)
	}
}

// TestTakeOverKeepsTheRecordedLocation: a claim records where its
// resource lives (an R2 bucket's jurisdiction, which picks the endpoint
// of every call on it). Taken over from a Buckety that is gone, retained
// or not, it keeps that location whatever the taker asks, so that no call
// of the taker's goes to a resource of the same name elsewhere; and a
// verdict the taker's check reached at another location is not recorded:
// the claim is taken over Claimed, for the check to run where the
// resource lives. Given up, it reverts to the record with that location.
// Before, the takeover recorded the taker's location (none at all, for
// Acquire), and a check that found nothing at the taker's location
// recorded Created: the create went to the other location.
func TestTakeOverKeepsTheRecordedLocation(t *testing.T) {
	ctx := context.Background()
	eu := map[string]string{"jurisdiction": "eu"}
	none := map[string]string{NoLocation: ""}
	for _, c := range []struct {
		name     string
		retained bool
		phase    v1.ClaimPhase
		location map[string]string
		want     v1.ClaimPhase
	}{
		{"retained, taken over Claimed", true, v1.ClaimClaimed, nil, v1.ClaimClaimed},
		{"retained, found missing at another location", true, v1.ClaimCreated, none, v1.ClaimClaimed},
		{"retained, found at another location", true, v1.ClaimAdopting, none, v1.ClaimClaimed},
		{"retained, checked where it lives", true, v1.ClaimAdopting, eu, v1.ClaimAdopting},
		{"owner gone without its deletion, found missing at another location", false, v1.ClaimCreated, none, v1.ClaimClaimed},
	} {
		t.Run(c.name, func(t *testing.T) {
			gone := claimOf("s3", "data", "team", "data", "gone-uid", v1.ClaimCreated)
			gone.Spec.Location = eu
			if c.retained {
				gone = retainedBy(gone)
			}
			heir := buckety("other", "data")
			api := newClient(t, heir, gone)
			s := &Store{Client: api, APIReader: api}
			taken, took, conflict, err := s.AcquireAs(ctx, heir, Key{Backend: "s3", Resource: "data"}, c.phase, c.location, nil)
			if err != nil || conflict != nil || !took || taken == nil {
				t.Fatalf("want it taken over, got %+v, took %v, conflict %+v, %v", taken, took, conflict, err)
			}
			got := getClaim(t, api, "s3", "data")
			if got.Spec.Owner.UID != string(heir.UID) || got.Spec.Phase != c.want || !maps.Equal(got.Spec.Location, eu) {
				t.Fatalf("want the heir's claim %s, located where the resource lives (%v), got %s for %s at %v", c.want, eu, got.Spec.Phase, got.Spec.Owner.UID, got.Spec.Location)
			}
			if taken.Spec.Phase != got.Spec.Phase || !maps.Equal(taken.Spec.Location, got.Spec.Location) {
				t.Errorf("want the claim returned as written, got %s at %v", taken.Spec.Phase, taken.Spec.Location)
			}
			if got.Spec.Retained == nil || got.Spec.Retained.Owner.UID != "gone-uid" {
				t.Fatalf("want the record of the Buckety it was taken from kept, got %+v", got.Spec.Retained)
			}
			if released, err := s.LetGo(ctx, got); err != nil || released {
				t.Fatalf("a takeover never written to: want it reverted, got released %v, %v", released, err)
			}
			if got = getClaim(t, api, "s3", "data"); got.Spec.Owner.UID != "gone-uid" || !maps.Equal(got.Spec.Location, eu) {
				t.Errorf("want it reverted to gone-uid's claim at %v, got %s at %v", eu, got.Spec.Owner.UID, got.Spec.Location)
			}
		})
	}
}

// TestTakeOverKeepsTheRecordUntilCreated: a takeover whose check found
// the resource missing records Created before its create, and keeps the
// retained record it took the name from until that create has succeeded
// (CreateSucceeded). A create the backend refuses (the claim Claimed
// again), or one that never ran (the process stopped after the claim was
// written), leaves the record: the next pass judges the name as this one
// did (Knew), and a takeover given up reverts to it instead of freeing
// the name. Before, entering Created dropped the record, and a takeover
// whose create was refused was released when given up.
func TestTakeOverKeepsTheRecordUntilCreated(t *testing.T) {
	ctx := context.Background()
	gone := claimOf("kafka", "orders", "team", "orders", "gone-uid", v1.ClaimCreated)
	heir := buckety("other", "grab")
	api := newClient(t, heir, retainedBy(gone))
	s := &Store{Client: api, APIReader: api}
	k := Key{Backend: "kafka", Resource: "orders"}
	kept := func(when string, phase v1.ClaimPhase) *v1.BucketyClaim {
		t.Helper()
		cl := getClaim(t, api, "kafka", "orders")
		if cl.Spec.Owner.UID != string(heir.UID) || cl.Spec.Phase != phase || cl.Spec.Retained == nil || cl.Spec.Retained.Owner.UID != "gone-uid" {
			t.Fatalf("%s: want the heir's claim %s keeping the record of gone-uid, got %s for %s, retained %+v", when, phase, cl.Spec.Phase, cl.Spec.Owner.UID, cl.Spec.Retained)
		}
		if knew, err := s.Knew(ctx, k, "gone-uid", ""); err != nil || !knew {
			t.Errorf("%s: want the claims to show gone-uid held the name, got %v (%v)", when, knew, err)
		}
		return cl
	}

	// Checked before the claim, taken over Created (AcquireAs).
	if _, took, conflict, err := s.AcquireAs(ctx, heir, k, v1.ClaimCreated, nil, nil); err != nil || conflict != nil || !took {
		t.Fatalf("take over: took %v, conflict %+v, %v", took, conflict, err)
	}
	cl := kept("taken over Created, nothing created yet", v1.ClaimCreated)
	// The backend refuses the create: Claimed again.
	if err := s.Advance(ctx, cl, v1.ClaimClaimed); err != nil {
		t.Fatal(err)
	}
	cl = kept("the create refused", v1.ClaimClaimed)
	if released, err := s.LetGo(ctx, cl); err != nil || released {
		t.Fatalf("a takeover whose create was refused: want it reverted, got released %v, %v", released, err)
	}
	if cl = getClaim(t, api, "kafka", "orders"); !IsRetained(cl) || cl.Spec.Owner.UID != "gone-uid" {
		t.Fatalf("want it reverted to gone-uid's retained claim, got %+v", cl.Spec)
	}

	// Checked after the claim (Acquire, then Advance to Created).
	taken, conflict, err := s.Acquire(ctx, heir, k)
	if err != nil || conflict != nil {
		t.Fatalf("take over: conflict %+v, %v", conflict, err)
	}
	if err := s.Advance(ctx, taken, v1.ClaimCreated); err != nil {
		t.Fatal(err)
	}
	// The process stops here: what the next pass reads is the record.
	cl = kept("recorded Created, the process stopped before the create", v1.ClaimCreated)
	if err := s.CreateSucceeded(ctx, cl); err != nil {
		t.Fatal(err)
	}
	cl = getClaim(t, api, "kafka", "orders")
	if cl.Spec.Retained != nil || cl.Spec.Phase != v1.ClaimCreated || cl.Spec.Owner.UID != string(heir.UID) {
		t.Fatalf("the create succeeded: want the heir's own Created claim, no record kept, got %+v", cl.Spec)
	}
	if knew, err := s.Knew(ctx, k, "gone-uid", string(heir.UID)); err != nil || !knew {
		t.Errorf("the create succeeded: want the claims to show they decided the name for the heir, got %v (%v)", knew, err)
	}
	// Its own retained record is not another Buckety's: kept.
	if released, err := s.LetGo(ctx, cl); err != nil || released {
		t.Fatalf("let go: released %v, %v", released, err)
	}
	cl = getClaim(t, api, "kafka", "orders")
	if err := s.CreateSucceeded(ctx, cl); err != nil {
		t.Fatal(err)
	}
	if cl = getClaim(t, api, "kafka", "orders"); !IsRetained(cl) || cl.Spec.Owner.UID != string(heir.UID) {
		t.Errorf("want the heir's claim still retained from the heir, got %+v", cl.Spec)
	}
}

// TestAdvanceFromCreatedToAdoptingDropsTheRecord: a takeover recorded
// Created (its check found the retained resource missing) whose create
// finds the resource there after all moves to Adopting: that resource was
// made by someone else, so the retained record is dropped, and vouches for
// nothing. One taken over Adopting (its check found the resource) keeps
// the record until the adoption settles.
func TestAdvanceFromCreatedToAdoptingDropsTheRecord(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		taken v1.ClaimPhase
		kept  bool
	}{
		{"taken over Created, the create found it there", v1.ClaimCreated, false},
		{"taken over Claimed, the check found it there", v1.ClaimClaimed, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gone := claimOf("s3", "orders", "team", "orders", "gone-uid", v1.ClaimCreated)
			heir := buckety("other", "grab")
			api := newClient(t, heir, retainedBy(gone))
			s := &Store{Client: api, APIReader: api}
			if _, took, conflict, err := s.AcquireAs(ctx, heir, Key{Backend: "s3", Resource: "orders"}, c.taken, nil, nil); err != nil || conflict != nil || !took {
				t.Fatalf("take over: took %v, conflict %+v, %v", took, conflict, err)
			}
			cl := getClaim(t, api, "s3", "orders")
			if err := s.Advance(ctx, cl, v1.ClaimAdopting); err != nil {
				t.Fatal(err)
			}
			cl = getClaim(t, api, "s3", "orders")
			if cl.Spec.Phase != v1.ClaimAdopting || (cl.Spec.Retained != nil) != c.kept {
				t.Errorf("want the heir's claim Adopting, the retained record kept %v, got %s, retained %+v", c.kept, cl.Spec.Phase, cl.Spec.Retained)
			}
		})
	}
}
