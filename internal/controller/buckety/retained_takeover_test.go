package buckety

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// placed is an S3 service with a second endpoint per jurisdiction, as R2
// has: every call goes to the endpoint its resource's parameters pick
// ("" the account's), each an in-memory service of its own. A bucket of
// one name may stand at one endpoint and not at another.
type placed struct {
	at map[string]*drivertest.Backend
	// refuse answers creates with a refusal (drivers.NotCreatedError),
	// down with no answer (drivers.UnavailableError: the create may or
	// may not have been made).
	refuse, down bool
}

func newPlaced() *placed {
	return &placed{at: map[string]*drivertest.Backend{"": drivertest.NewBackend(), "eu": drivertest.NewBackend()}}
}

func (p *placed) on(r drivers.Resource) *drivertest.Backend {
	return p.at[r.Parameters["jurisdiction"]]
}

func (p *placed) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	return p.on(r).Inspect(ctx, r)
}

func (p *placed) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	if _, ok := p.on(r).Get(r.Name); !ok && !r.DryRun {
		switch {
		case p.refuse:
			return drivers.EnsureResult{}, &drivers.NotCreatedError{Err: &drivers.RefusedError{Err: errors.New("InvalidLocationConstraint")}}
		case p.down:
			return drivers.EnsureResult{}, drivertest.Unavailable()
		}
	}
	return p.on(r).Ensure(ctx, r)
}

func (p *placed) Delete(ctx context.Context, r drivers.Resource) error {
	return p.on(r).Delete(ctx, r)
}

func (p *placed) Grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	return p.at[""].Grant(ctx, a)
}

func (p *placed) Revoke(ctx context.Context, a drivers.Access) error { return p.at[""].Revoke(ctx, a) }

func (p *placed) Close() error { return nil }

// calls counts op's calls at every endpoint.
func (p *placed) calls(op string) map[string]int {
	out := map[string]int{}
	for j, be := range p.at {
		out[j] = be.Calls(op)
	}
	return out
}

// registryOwners is memOwners kept in a registry apart from the
// resources, as kadm's: a record outlives its resource.
type registryOwners struct{ memOwners }

func (*registryOwners) OwnerRecordsOutliveResources() bool { return true }

// retainedRig is a reconciler on backend s3 (whose driver locates by
// jurisdiction) of installation north, with one claim, on the bucket
// name, retained from the deleted Buckety a/data (UID uid-old) at
// location, and b: the Buckety that applies for the name now.
type retainedRig struct {
	r     *Reconciler
	e     *backends.Entry
	be    *placed
	b     *v1.Buckety
	claim string
}

func newRetainedRig(t *testing.T, owners drivers.OwnerRecorder, name string, location map[string]string, unmarked bool, b *v1.Buckety) *retainedRig {
	t.Helper()
	set := testSetOf(t, "installation: north\nbackends:\n- {name: s3, driver: s3, config: {endpoint: 'http://127.0.0.1:1', accessKeyID: a, secretAccessKey: b}}\n")
	got, ok := set.Get("s3")
	if !ok {
		t.Fatal("no backend s3")
	}
	e := *got
	if keys := drivers.LocationParameters(e.Driver); !slicesEqual(keys, []string{"jurisdiction"}) {
		t.Fatalf("want the s3 driver to locate by jurisdiction, got %v", keys)
	}
	be := newPlaced()
	e.Backend, e.Owners, e.Sweeper = be, owners, nil
	r := &Reconciler{Backends: set}
	k := r.key(&e, name)
	gone := v1.ClaimOwner{Namespace: "a", Name: "data", UID: "uid-old"}
	retained := &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: k.Name(), Labels: map[string]string{v1.ClaimOwnerLabel: gone.UID}},
		Spec: v1.BucketyClaimSpec{Backend: "s3", Service: k.Service, ResourceName: name, Phase: v1.ClaimCreated, Owner: gone, Location: location,
			Retained: &v1.ClaimRetained{Since: metav1.Now(), Owner: gone, Phase: v1.ClaimCreated, RecordUnmarked: unmarked}}}
	cl := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(b.DeepCopy(), retained).
		WithIndex(&v1.BucketyClaim{}, objects.IndexClaimOwner, func(o client.Object) []string {
			return []string{o.(*v1.BucketyClaim).Spec.Owner.UID}
		}).Build()
	r.Client, r.APIReader = cl, cl
	r.Claims = &claims.Store{Client: cl, APIReader: cl}
	return &retainedRig{r: r, e: &e, be: be, b: b, claim: k.Name()}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// fresh is the claim on the name, read from the API server.
func (g *retainedRig) fresh(t *testing.T) *v1.BucketyClaim {
	t.Helper()
	cl, err := g.r.Claims.Fresh(context.Background(), g.claim)
	if err != nil || cl == nil {
		t.Fatalf("read the claim: %v, %v", cl, err)
	}
	return cl
}

// pass runs what a provisioning pass runs: the claim, then provision.
func (g *retainedRig) pass(t *testing.T) (*facts, bool) {
	t.Helper()
	return claimAndProvision(t, g.r, g.b, g.e, &facts{resourceName: g.fresh(t).Spec.ResourceName})
}

// TestRetainedIsTakenOverWhereItLives: bucket data was made in the EU
// jurisdiction (its own endpoint) for Buckety a/data, deleted since with
// retentionPolicy Retain: its claim is retained, recording jurisdiction
// eu. A new a/data applies for the name. Without the jurisdiction (the
// account endpoint, where no bucket data stands), it is refused, told
// which parameter differs, nothing is asked of either endpoint, and the
// claim stays retained at eu; that holds where the pass claims before
// its check, and where it checks first (the cache did not show the
// claim). With the jurisdiction, the check looks in the EU and takes the
// bucket over there. Before, the takeover dropped the recorded location,
// the check found nothing at the account endpoint, and the claim was
// recorded Created there: a second bucket data was created at the
// account endpoint, and the record of the one in the EU was lost.
func TestRetainedIsTakenOverWhereItLives(t *testing.T) {
	ctx := context.Background()
	eu := map[string]string{"jurisdiction": "eu"}
	for _, c := range []struct {
		name       string
		params     map[string]string
		checkFirst bool
	}{
		{name: "no jurisdiction: refused"},
		{name: "no jurisdiction, checked before the claim: refused", checkFirst: true},
		{name: "jurisdiction eu: taken over in the EU", params: eu},
		{name: "jurisdiction eu, checked before the claim: taken over in the EU", params: eu, checkFirst: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			owners := &memOwners{recs: map[string]drivers.OwnerRecord{"data": {Installation: "north", Namespace: "a", Name: "data", UID: "uid-old", State: drivers.OwnerRetained}}}
			b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "data", UID: "uid-new", Generation: 1},
				Spec: v1.BucketySpec{Backend: "s3", Parameters: maps.Clone(c.params)}}
			g := newRetainedRig(t, owners, "data", eu, false, b)
			g.be.at["eu"].Put("data", 0)

			f := &facts{resourceName: "data"}
			mergeDefaults(g.e, b, f)
			if !c.checkFirst && !g.r.claim(ctx, b, g.e, f) {
				t.Fatalf("claim: want it taken, got claimErr %v, conflict %v", f.claimErr, f.conflict)
			}
			mine, creates, _, ok := g.r.inspectAndRecord(ctx, b, g.e, f, f.claim)
			if f.claimErr != nil {
				t.Fatal(f.claimErr)
			}
			cl := g.fresh(t)
			if c.params == nil {
				if ok || creates {
					t.Fatalf("want the takeover refused, got ok %v, creates %v, claim %s at %v", ok, creates, phaseOf(mine), cl.Spec.Location)
				}
				if !strings.Contains(f.locationChanged, "spec.parameters[jurisdiction]") || !strings.Contains(f.locationChanged, `"eu"`) {
					t.Errorf("want the refusal to name the parameter and the value the bucket was made with, got %q", f.locationChanged)
				}
				if got := readiness(b, f).ready; got.Reason != v1.ReasonInvalidParameters || !strings.Contains(got.Message, "retained") {
					t.Errorf("want Ready False, InvalidParameters, telling the bucket is retained, got %s: %q", got.Reason, got.Message)
				}
				if !claims.IsRetained(cl) || cl.Spec.Owner.UID != "uid-old" || !maps.Equal(cl.Spec.Location, eu) {
					t.Errorf("want the claim given back to a/data's retained record at %v, got %s for %s at %v", eu, cl.Spec.Phase, cl.Spec.Owner.UID, cl.Spec.Location)
				}
				if got := g.be.calls("ensure"); got[""]+got["eu"] != 0 {
					t.Errorf("want nothing ensured anywhere, got %v", got)
				}
				if _, made := g.be.at[""].Get("data"); made {
					t.Error("want no bucket data made at the account endpoint")
				}
				return
			}
			if !ok || mine == nil || creates {
				t.Fatalf("want the bucket taken over, got ok %v, creates %v, refused %q, location %q, owned elsewhere %q", ok, creates, f.adoptionRefused, f.locationChanged, f.ownedElsewhere)
			}
			if cl.Spec.Owner.UID != "uid-new" || cl.Spec.Phase != v1.ClaimAdopting || !maps.Equal(cl.Spec.Location, eu) {
				t.Errorf("want uid-new's claim Adopting at %v, got %s for %s at %v", eu, cl.Spec.Phase, cl.Spec.Owner.UID, cl.Spec.Location)
			}
			if got := g.be.calls("inspect"); got["eu"] == 0 || got[""] != 0 {
				t.Errorf("want the bucket inspected in the EU only, got %v", got)
			}
		})
	}
}

// TestTakeOverOfAMissingRetainedResourceDecidesAgain: Buckety a/data
// (uid-old) made bucket orders on a backend whose owner records
// outlive their resources (a registry, as kadm's); it was deleted with
// retentionPolicy Retain while its backend was missing from the config,
// so its record still holds the name for it (the claim is retained,
// recordUnmarked), and the bucket was deleted out of band since. Buckety
// b/x of the same installation applies for the name: the claims show
// this cluster knew a/data, so the name is free, and b/x's claim is
// recorded Created before the create. The create is refused, or gets no
// answer. The next pass decides as the first did, and creates it. Before,
// recording Created dropped the retained record, so after a refused
// create the next pass found the name held for a Buckety this cluster
// never knew, refused, and released the claim; and a claim left Created
// by a create with no answer had lost the record of whom the name was
// retained from.
func TestTakeOverOfAMissingRetainedResourceDecidesAgain(t *testing.T) {
	for _, c := range []struct {
		name string
		// refused: the create is refused (else unanswered).
		refused bool
		phase   v1.ClaimPhase
	}{
		{name: "create refused", refused: true, phase: v1.ClaimClaimed},
		{name: "create unanswered", phase: v1.ClaimCreated},
	} {
		t.Run(c.name, func(t *testing.T) {
			owners := &registryOwners{memOwners{recs: map[string]drivers.OwnerRecord{"orders": {Installation: "north", Namespace: "a", Name: "data", UID: "uid-old", State: drivers.OwnerHeld}}}}
			b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x", UID: "uid-new", Generation: 1},
				Spec: v1.BucketySpec{Backend: "s3"}}
			g := newRetainedRig(t, owners, "orders", map[string]string{claims.NoLocation: ""}, true, b)
			g.be.refuse, g.be.down = c.refused, !c.refused

			f, ok := g.pass(t)
			if ok || f.ownedElsewhere != "" || f.Err() == nil {
				t.Fatalf("first pass: want the create failed, got ok %v, owned elsewhere %q, failure %v", ok, f.ownedElsewhere, f.Err())
			}
			cl := g.fresh(t)
			if cl.Spec.Owner.UID != "uid-new" || cl.Spec.Phase != c.phase {
				t.Fatalf("first pass: want uid-new's claim %s, got %s for %s", c.phase, cl.Spec.Phase, cl.Spec.Owner.UID)
			}
			if r := cl.Spec.Retained; r == nil || r.Owner.UID != "uid-old" || !r.RecordUnmarked {
				t.Fatalf("first pass: want the record of a/data (uid-old, recordUnmarked) kept until the create succeeds, got %+v", r)
			}

			g.be.refuse, g.be.down = false, false
			f, ok = g.pass(t)
			if !ok {
				t.Fatalf("next pass: want the bucket created, as the first pass decided, got owned elsewhere %q, refused %q, claimErr %v, failure %v", f.ownedElsewhere, f.adoptionRefused, f.claimErr, f.Err())
			}
			if _, made := g.be.at[""].Get("orders"); !made {
				t.Error("next pass: want bucket orders created")
			}
			cl = g.fresh(t)
			if cl.Spec.Owner.UID != "uid-new" || cl.Spec.Phase != v1.ClaimCreated || cl.Spec.Retained != nil {
				t.Errorf("next pass: want uid-new's own Created claim, the record dropped now the create succeeded, got %s for %s, retained %+v", cl.Spec.Phase, cl.Spec.Owner.UID, cl.Spec.Retained)
			}
			if rec := owners.recs["orders"]; rec.UID != "uid-new" || rec.State != drivers.OwnerHeld {
				t.Errorf("next pass: want the owner record held for uid-new, got %+v", rec)
			}
		})
	}
}

// TestTakeOverWhoseCreateFindsItThereIsNotVouched: bucket orders, made
// for Buckety a/data (uid-old) on a backend that keeps no owner records,
// was retained when a/data was deleted, and deleted out of band since.
// Buckety b/x applies for the name: its check finds it missing, so its
// claim is recorded Created; before its create, someone outside buckety
// makes an empty bucket orders. The create finds it there, and the claim
// goes Adopting: that bucket is not the retained one, so it is refused as
// any made outside buckety (b/x has no adoption keys), and the claim is
// released. Before, the claim kept the retained record while Adopting,
// and the record vouched for the bucket: it was adopted.
func TestTakeOverWhoseCreateFindsItThereIsNotVouched(t *testing.T) {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x", UID: "uid-new", Generation: 1},
		Spec: v1.BucketySpec{Backend: "s3"}}
	g := newRetainedRig(t, nil, "orders", map[string]string{claims.NoLocation: ""}, false, b)
	acc := g.be.at[""]
	acc.BeforeEnsure = func(name string) {
		acc.BeforeEnsure = nil
		acc.Put(name, 0)
	}

	f, ok := g.pass(t)
	if ok || f.claimErr == nil {
		t.Fatalf("first pass: want the create to find the bucket there, got ok %v, claimErr %v, failure %v", ok, f.claimErr, f.Err())
	}
	cl := g.fresh(t)
	if cl.Spec.Owner.UID != "uid-new" || cl.Spec.Phase != v1.ClaimAdopting || cl.Spec.Retained != nil {
		t.Fatalf("first pass: want uid-new's claim Adopting, without the record of the bucket retained, got %s for %s, retained %+v", cl.Spec.Phase, cl.Spec.Owner.UID, cl.Spec.Retained)
	}

	f, ok = g.pass(t)
	if ok || f.adoptionRefused == "" {
		t.Fatalf("next pass: want the bucket made outside buckety refused, got ok %v, refused %q, claimErr %v, failure %v", ok, f.adoptionRefused, f.claimErr, f.Err())
	}
	if got, err := g.r.Claims.Fresh(context.Background(), g.claim); err != nil {
		t.Fatal(err)
	} else if got != nil {
		t.Errorf("next pass: want the claim released, got %s for %s", got.Spec.Phase, got.Spec.Owner.UID)
	}
}
