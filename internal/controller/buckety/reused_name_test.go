package buckety

import (
	"context"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// memOwners is an in-memory drivers.OwnerRecorder keeping its records
// with the resources, as S3 tags are.
type memOwners struct {
	mu     sync.Mutex
	recs   map[string]drivers.OwnerRecord
	writes int
}

func (m *memOwners) OwnerRecords(context.Context) (bool, string, error) { return true, "", nil }

func (m *memOwners) ReadOwner(_ context.Context, r drivers.Resource) (*drivers.OwnerRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.recs[r.Name]
	if !ok {
		return nil, nil
	}
	return &rec, nil
}

func (m *memOwners) WriteOwner(_ context.Context, r drivers.Resource, rec *drivers.OwnerRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if rec == nil {
		delete(m.recs, r.Name)
		return nil
	}
	m.recs[r.Name] = *rec
	return nil
}

// TestReusedNameIsNotReattached: Buckety a/orders (uid-old) of
// installation north created resource orders, which its tenant filled;
// its finalizer was removed by hand and namespace a deleted, leaving its
// claim (Created, owner gone) and its Held owner record. Another team
// gets namespace a and applies its own a/orders (uid-new), without
// adoption keys. The record names the namespace and name, but the stale
// claim shows this cluster knew the Buckety it names, and that it is
// gone: the resource follows the adoption rules (content: refused, the
// claim reverted to the gone owner, the record left as it was; empty:
// adopted, as a resource retained would be). A cluster rebuilt from Git
// (no claim at all) re-attaches it with its data, as before.
func TestReusedNameIsNotReattached(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		stale    bool
		records  int
		refused  bool
		phase    v1.ClaimPhase
		recordTo types.UID
	}{
		{name: "stale claim, content: refused", stale: true, records: 3, refused: true, recordTo: "uid-old"},
		{name: "stale claim, empty: adopted", stale: true, phase: v1.ClaimAdopting, recordTo: "uid-old"},
		{name: "rebuilt from Git, no claim: re-attached", records: 3, phase: v1.ClaimCreated, recordTo: "uid-old"},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := testSetOf(t, "installation: north\nbackends:\n- {name: s3, driver: s3, config: {endpoint: 'http://127.0.0.1:1', accessKeyID: a, secretAccessKey: b}}\n")
			got, ok := set.Get("s3")
			if !ok {
				t.Fatal("no backend s3")
			}
			e := *got
			be := drivertest.NewBackend()
			be.Put("orders", c.records)
			owners := &memOwners{recs: map[string]drivers.OwnerRecord{"orders": {Installation: "north", Namespace: "a", Name: "orders", UID: "uid-old", State: drivers.OwnerHeld}}}
			e.Backend, e.Owners = be, owners

			b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders", UID: "uid-new", Generation: 1},
				Spec: v1.BucketySpec{Backend: "s3"}}
			objs := []client.Object{b.DeepCopy()}
			r := &Reconciler{Backends: set}
			k := r.key(&e, "orders")
			if c.stale {
				objs = append(objs, &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: k.Name(), Labels: map[string]string{v1.ClaimOwnerLabel: "uid-old"}},
					Spec: v1.BucketyClaimSpec{Backend: "s3", Service: k.Service, ResourceName: "orders", Phase: v1.ClaimCreated,
						Owner: v1.ClaimOwner{Namespace: "a", Name: "orders", UID: "uid-old"}}})
			}
			cl := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
				WithIndex(&v1.BucketyClaim{}, objects.IndexClaimOwner, func(o client.Object) []string {
					return []string{o.(*v1.BucketyClaim).Spec.Owner.UID}
				}).Build()
			r.Client, r.APIReader = cl, cl
			r.Claims = &claims.Store{Client: cl, APIReader: cl}

			// As provision does: the claim, then the adoption check.
			f := &facts{resourceName: "orders"}
			if !r.claim(ctx, b, &e, f) {
				t.Fatalf("claim: want it taken, got claimErr %v, conflict %v", f.claimErr, f.conflict)
			}
			mine, _, _, ok := r.inspectAndRecord(ctx, b, &e, f, f.claim)
			if c.refused {
				if ok || f.adoptionRefused == "" {
					t.Fatalf("want the resource of the gone a/orders refused (AdoptionRefused), got ok %v, claim %v, refused %q, claimErr %v", ok, phaseOf(mine), f.adoptionRefused, f.claimErr)
				}
				left, err := r.Claims.Fresh(ctx, k.Name())
				if err != nil {
					t.Fatal(err)
				}
				if left == nil || left.Spec.Owner.UID != "uid-old" {
					t.Errorf("want the claim given back to the gone owner (retained, counted), got %+v", left)
				}
			} else {
				if !ok || mine == nil {
					t.Fatalf("want the resource taken, got ok %v, refused %q, owned elsewhere %q, claimErr %v", ok, f.adoptionRefused, f.ownedElsewhere, f.claimErr)
				}
				if mine.Spec.Phase != c.phase || mine.Spec.Owner.UID != string(b.UID) {
					t.Errorf("want the claim %s for %s, got %s for %s", c.phase, b.UID, mine.Spec.Phase, mine.Spec.Owner.UID)
				}
			}
			if rec := owners.recs["orders"]; types.UID(rec.UID) != c.recordTo || rec.State != drivers.OwnerHeld {
				t.Errorf("want the owner record held for %s, got %+v", c.recordTo, rec)
			}
		})
	}
}

func phaseOf(cl *v1.BucketyClaim) v1.ClaimPhase {
	if cl == nil {
		return ""
	}
	return cl.Spec.Phase
}

var _ drivers.OwnerRecorder = (*memOwners)(nil)
