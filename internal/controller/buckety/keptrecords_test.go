package buckety

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
)

// lostRegistry is a registry of owner records (registryOwners) that can
// be lost, moving its epoch (drivers.RegistryEpochs), and whose writes
// of a resource fail a number of times.
type lostRegistry struct {
	registryOwners
	epoch uint64
	// fail is how many more writes of each resource fail, with failErr
	// (an error of the service's own when nil).
	fail    map[string]int
	failErr error
	// tried counts the writes asked of each resource.
	tried map[string]int
}

func newLostRegistry(recs map[string]drivers.OwnerRecord) *lostRegistry {
	return &lostRegistry{registryOwners: registryOwners{memOwners{recs: recs}}, fail: map[string]int{}, tried: map[string]int{}}
}

func (o *lostRegistry) CatchUpRegistry(context.Context, time.Duration) error { return nil }

func (o *lostRegistry) RegistryEpoch() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.epoch
}

// lose loses every record, as a registry deleted and created again.
func (o *lostRegistry) lose() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recs = map[string]drivers.OwnerRecord{}
	o.epoch++
}

func (o *lostRegistry) WriteOwner(ctx context.Context, r drivers.Resource, rec *drivers.OwnerRecord) error {
	o.mu.Lock()
	o.tried[r.Name]++
	failing := o.fail[r.Name] > 0
	if failing {
		o.fail[r.Name]--
	}
	err := o.failErr
	o.mu.Unlock()
	if failing {
		if err == nil {
			err = errors.New("NOT_LEADER_OR_FOLLOWER")
		}
		return err
	}
	return o.memOwners.WriteOwner(ctx, r, rec)
}

// record is the registry's record of name, nil when it has none.
func (o *lostRegistry) record(name string) *drivers.OwnerRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	rec, ok := o.recs[name]
	if !ok {
		return nil
	}
	return &rec
}

func (o *lostRegistry) put(name string, rec drivers.OwnerRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.recs[name] = rec
}

func (o *lostRegistry) triedOf(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.tried[name]
}

// retainedClaim is the claim on resource of backend kafka retained from
// the deleted Buckety a/from (UID uid-from) in phase.
func retainedClaim(from, resource string, phase v1.ClaimPhase, unmarked bool) *v1.BucketyClaim {
	gone := v1.ClaimOwner{Namespace: "a", Name: from, UID: "uid-" + from}
	return &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: "kafka." + resource, Labels: map[string]string{v1.ClaimOwnerLabel: gone.UID}},
		Spec: v1.BucketyClaimSpec{Backend: "kafka", Service: "kafka", ResourceName: resource, Phase: phase, Owner: gone,
			Retained: &v1.ClaimRetained{Since: metav1.Now(), Owner: gone, Phase: phase, RecordUnmarked: unmarked}}}
}

// keptRig is a drift sweep of backend kafka of installation north, whose
// owner registry can be lost, over the claims given.
type keptRig struct {
	s     *Sweeper
	e     *backends.Entry
	be    *drivertest.Backend
	owner *lostRegistry
}

func newKeptRig(t *testing.T, yaml string, owners *lostRegistry, objs ...client.Object) *keptRig {
	t.Helper()
	set := testSetOf(t, yaml)
	got, ok := set.Get("kafka")
	if !ok {
		t.Fatal("no backend kafka")
	}
	e := *got
	be := drivertest.NewBackend()
	e.Backend, e.Owners = be, owners
	cl := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	return &keptRig{s: &Sweeper{Reader: cl, Backends: set, Interval: time.Minute, Log: testr.New(t)}, e: &e, be: be, owner: owners}
}

func (g *keptRig) sweep(t *testing.T) {
	t.Helper()
	if err := g.s.SweepOnce(context.Background(), g.e); err != nil {
		t.Fatal(err)
	}
}

const northKafka = "installation: north\nbackends:\n- {name: kafka, driver: kadm, config: {seedBrokers: ['127.0.0.1:1']}}\n"

// TestRetainedRecordsWrittenAgainAfterRegistryLoss: installation north
// keeps, on backend kafka, resources retained from deleted Bucketies of
// namespace a, their records in the owner registry: kept and adopted
// (retained), unmarked (its backend was missing from the config when its
// Buckety was deleted: still held), flaky and taken (retained), and
// theirs, on which north's claim stands but whose record is installation
// south's (deleted out of band and created again there). A claim being
// taken over by Buckety b/new (its owner now) is not retained. The
// registry is lost. The next sweep writes retained again, as their
// deletions did, the records north held: kept, adopted (adopted still)
// and unmarked (retained, as its deletion would have written). Not
// theirs: a record written for it would keep south out of its own topic.
// Not taken, which south recorded meanwhile: left as it is. Not flaky,
// whose write fails: the sweep after tries it again, and again until it
// is written. Nothing is written without a loss, not even a record
// removed by hand; a second loss has them written again. Before, the
// records of retained resources stayed lost, and south could adopt them.
func TestRetainedRecordsWrittenAgainAfterRegistryLoss(t *testing.T) {
	rec := func(from string, state drivers.OwnerState, adopted bool) drivers.OwnerRecord {
		return drivers.OwnerRecord{Installation: "north", Namespace: "a", Name: from, UID: "uid-" + from, State: state, Adopted: adopted}
	}
	south := drivers.OwnerRecord{Installation: "south", Namespace: "a", Name: "theirs", UID: "uid-south", State: drivers.OwnerHeld}
	owners := newLostRegistry(map[string]drivers.OwnerRecord{
		"a.kept":     rec("kept", drivers.OwnerRetained, false),
		"a.adopted":  rec("adopted", drivers.OwnerRetained, true),
		"a.unmarked": rec("unmarked", drivers.OwnerHeld, false),
		"a.flaky":    rec("flaky", drivers.OwnerRetained, false),
		"a.taken":    rec("taken", drivers.OwnerRetained, false),
		"a.theirs":   south,
		"a.takeover": rec("takeover", drivers.OwnerRetained, false),
	})
	takeover := retainedClaim("takeover", "a.takeover", v1.ClaimCreated, false)
	takeover.Spec.Owner, takeover.Spec.Phase = v1.ClaimOwner{Namespace: "b", Name: "new", UID: "uid-new"}, v1.ClaimAdopting
	g := newKeptRig(t, northKafka, owners,
		retainedClaim("kept", "a.kept", v1.ClaimCreated, false),
		retainedClaim("adopted", "a.adopted", v1.ClaimAdopted, false),
		retainedClaim("unmarked", "a.unmarked", v1.ClaimCreated, true),
		retainedClaim("flaky", "a.flaky", v1.ClaimCreated, false),
		retainedClaim("taken", "a.taken", v1.ClaimCreated, false),
		retainedClaim("theirs", "a.theirs", v1.ClaimCreated, false),
		takeover,
	)

	g.sweep(t)
	if owners.writes != 0 {
		t.Fatalf("first sweep, no loss: want nothing written, got %d writes", owners.writes)
	}

	owners.lose()
	takenBySouth := drivers.OwnerRecord{Installation: "south", Namespace: "c", Name: "taken", UID: "uid-c", State: drivers.OwnerHeld}
	owners.put("a.taken", takenBySouth)
	owners.fail["a.flaky"] = 2
	g.sweep(t)
	for name, want := range map[string]drivers.OwnerRecord{
		"a.kept":     rec("kept", drivers.OwnerRetained, false),
		"a.adopted":  rec("adopted", drivers.OwnerRetained, true),
		"a.unmarked": rec("unmarked", drivers.OwnerRetained, false),
		"a.taken":    takenBySouth,
	} {
		if got := owners.record(name); !got.Same(&want) {
			t.Errorf("after the loss: want %s's record %v, got %v", name, want, got)
		}
	}
	for _, name := range []string{"a.theirs", "a.takeover", "a.flaky"} {
		if got := owners.record(name); got != nil {
			t.Errorf("after the loss: want no record of %s written, got %v", name, got)
		}
	}
	if got := owners.triedOf("a.flaky"); got != 1 {
		t.Fatalf("after the loss: want one write of a.flaky tried, got %d", got)
	}

	// The write failed: the next sweep tries it again, and only it.
	writes := owners.writes
	g.sweep(t)
	if got := owners.triedOf("a.flaky"); got != 2 || owners.record("a.flaky") != nil {
		t.Fatalf("the sweep after a failed write: want a.flaky tried again (and failing), got %d tries, record %v", got, owners.record("a.flaky"))
	}
	g.sweep(t)
	want := rec("flaky", drivers.OwnerRetained, false)
	if got := owners.record("a.flaky"); !got.Same(&want) {
		t.Fatalf("the sweep after two failed writes: want a.flaky's record %v, got %v", want, got)
	}
	if owners.writes != writes+1 {
		t.Errorf("retries: want no record but a.flaky's written again, got %d writes more", owners.writes-writes)
	}

	// Handled: without another loss nothing is written, not even a
	// record removed by hand.
	writes = owners.writes
	if err := owners.WriteOwner(context.Background(), drivers.Resource{Name: "a.kept"}, nil); err != nil {
		t.Fatal(err)
	}
	g.sweep(t)
	g.sweep(t)
	if owners.writes != writes+1 || owners.record("a.kept") != nil {
		t.Errorf("no loss: want nothing written, got %d writes, a.kept's record %v", owners.writes-writes-1, owners.record("a.kept"))
	}

	// A second loss: written again, from what the sweeps read since.
	owners.put("a.kept", rec("kept", drivers.OwnerRetained, false))
	g.sweep(t)
	owners.lose()
	g.sweep(t)
	for _, name := range []string{"a.kept", "a.adopted", "a.unmarked", "a.flaky"} {
		if got := owners.record(name); got == nil || got.Installation != "north" || got.State != drivers.OwnerRetained {
			t.Errorf("after a second loss: want %s's record written again, retained, got %v", name, got)
		}
	}
	for _, name := range []string{"a.theirs", "a.taken", "a.takeover"} {
		if got := owners.record(name); got != nil {
			t.Errorf("after a second loss: want no record of %s written, got %v", name, got)
		}
	}
}

// TestHandedOverRecordsWrittenAgainAfterRegistryLoss: on a backend that
// hands its resources over to installation west, the records of
// resources retained from deleted Bucketies are written again handed
// over to west, but only where the resource still exists: a mark would
// hold a name gone for west for good. A backend that cannot be reached
// stops the writes until the next sweep, rather than have every other
// resource wait for its timeout.
func TestHandedOverRecordsWrittenAgainAfterRegistryLoss(t *testing.T) {
	handed := func(from string) drivers.OwnerRecord {
		return drivers.OwnerRecord{Installation: "north", Namespace: "a", Name: from, UID: "uid-" + from, State: drivers.OwnerHandedOver, To: "west"}
	}
	owners := newLostRegistry(map[string]drivers.OwnerRecord{"a.first": handed("first"), "a.there": handed("there"), "a.gone": handed("gone")})
	g := newKeptRig(t, "installation: north\nbackends:\n- {name: kafka, driver: kadm, ownership: {handOverTo: west}, config: {seedBrokers: ['127.0.0.1:1']}}\n", owners,
		retainedClaim("first", "a.first", v1.ClaimCreated, false),
		retainedClaim("there", "a.there", v1.ClaimCreated, false),
		retainedClaim("gone", "a.gone", v1.ClaimCreated, false),
	)
	g.be.Put("a.first", 1)
	g.be.Put("a.there", 1)
	g.sweep(t)

	owners.lose()
	owners.fail["a.first"], owners.failErr = 1, drivertest.Unavailable()
	g.sweep(t)
	if got := owners.triedOf("a.there"); got != 0 {
		t.Fatalf("backend unreachable: want the other writes left to the next sweep, got %d tries of a.there", got)
	}
	g.sweep(t)
	for _, name := range []string{"a.first", "a.there"} {
		want := handed(name[2:])
		if got := owners.record(name); !got.Same(&want) {
			t.Errorf("want %s's record %v, got %v", name, want, got)
		}
	}
	if got := owners.record("a.gone"); got != nil {
		t.Errorf("want no mark on a.gone, which does not exist, got %v", got)
	}
}

// TestRecordsWrittenAgainAsTheyWere: the records of resources retained
// from deleted Bucketies are written again after a registry loss as they
// were before it, whatever the config asks now: on a backend that hands
// its resources over to west since, kept (retained when its Buckety was
// deleted) is written retained, and east (handed over to east then) is
// written handed over to east. Unmarked (still held: its backend was
// missing from the config when its Buckety was deleted) is written as
// its deletion would have now: handed over to west. Before, every record
// was written as the config asks now: a loss after handOverTo was added
// handed over to west resources that were only retained.
func TestRecordsWrittenAgainAsTheyWere(t *testing.T) {
	rec := func(from string, state drivers.OwnerState, to string) drivers.OwnerRecord {
		return drivers.OwnerRecord{Installation: "north", Namespace: "a", Name: from, UID: "uid-" + from, State: state, To: to}
	}
	owners := newLostRegistry(map[string]drivers.OwnerRecord{
		"a.kept":     rec("kept", drivers.OwnerRetained, ""),
		"a.east":     rec("east", drivers.OwnerHandedOver, "east"),
		"a.unmarked": rec("unmarked", drivers.OwnerHeld, ""),
	})
	g := newKeptRig(t, "installation: north\nbackends:\n- {name: kafka, driver: kadm, ownership: {handOverTo: west}, config: {seedBrokers: ['127.0.0.1:1']}}\n", owners,
		retainedClaim("kept", "a.kept", v1.ClaimCreated, false),
		retainedClaim("east", "a.east", v1.ClaimCreated, false),
		retainedClaim("unmarked", "a.unmarked", v1.ClaimCreated, true),
	)
	for _, name := range []string{"a.kept", "a.east", "a.unmarked"} {
		g.be.Put(name, 1)
	}
	g.sweep(t)

	owners.lose()
	g.sweep(t)
	for name, want := range map[string]drivers.OwnerRecord{
		"a.kept":     rec("kept", drivers.OwnerRetained, ""),
		"a.east":     rec("east", drivers.OwnerHandedOver, "east"),
		"a.unmarked": rec("unmarked", drivers.OwnerHandedOver, "west"),
	} {
		if got := owners.record(name); !got.Same(&want) {
			t.Errorf("after the loss: want %s's record %v, got %v", name, want, got)
		}
	}
}
