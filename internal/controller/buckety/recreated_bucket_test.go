package buckety

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// emptier drains a drivertest.Backend's resource in one step: its
// records gone, the resource left.
type emptier struct{ be *drivertest.Backend }

func (d emptier) Drain(_ context.Context, r drivers.Resource, _ drivers.DrainLimits) (drivers.DrainStep, error) {
	s, ok := d.be.Get(r.Name)
	if !ok {
		return drivers.DrainStep{}, &drivers.RefusedError{Err: errAbsent(r.Name)}
	}
	n := int64(s.Records)
	d.be.PutWith(r.Name, 0, s.Parameters)
	return drivers.DrainStep{Deleted: drivers.Content{Known: true, Objects: n}, Remaining: drivers.Content{Known: true}, Done: true, Requests: 1}, nil
}

type errAbsent string

func (e errAbsent) Error() string { return "no resource " + string(e) }

// recreatedRig is Buckety a/logs (retentionPolicy Delete) on backend s3
// of installation north, whose owner records are kept with the
// resources (memOwners, as a bucket's tags) unless registry is set (kept
// apart, as kadm's), and which allows drains.
type recreatedRig struct {
	r      *Reconciler
	e      *backends.Entry
	be     *drivertest.Backend
	owners *memOwners
	b      *v1.Buckety
	rec    *events.FakeRecorder
	claim  string
}

func newRecreatedRig(t *testing.T, registry bool) *recreatedRig {
	t.Helper()
	set := testSetOf(t, "installation: north\nbackends:\n- {name: s3, driver: s3, drain: {allow: true}, config: {endpoint: 'http://127.0.0.1:1', accessKeyID: a, secretAccessKey: b}}\n")
	e, ok := set.Get("s3")
	if !ok {
		t.Fatal("no backend s3")
	}
	be := drivertest.NewBackend()
	owners := &memOwners{recs: map[string]drivers.OwnerRecord{}}
	// The set's own entry: a deletion resolves its backend from the set.
	e.Backend, e.Sweeper, e.Usage, e.Drainer = be, nil, nil, emptier{be}
	e.Owners = owners
	if registry {
		e.Owners = &registryOwners{memOwners{recs: owners.recs}}
	}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "logs", UID: "uid-logs", Generation: 1},
		Spec: v1.BucketySpec{Backend: "s3", RetentionPolicy: v1.RetentionDelete}}
	cl := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(b.DeepCopy()).WithStatusSubresource(&v1.Buckety{}).
		WithIndex(&v1.BucketyClaim{}, objects.IndexClaimOwner, func(o client.Object) []string {
			return []string{o.(*v1.BucketyClaim).Spec.Owner.UID}
		}).Build()
	rec := events.NewFakeRecorder(20)
	r := &Reconciler{Backends: set, Client: cl, APIReader: cl, Claims: &claims.Store{Client: cl, APIReader: cl}, Recorder: rec}
	return &recreatedRig{r: r, e: e, be: be, owners: owners, b: b, rec: rec, claim: r.key(e, "logs").Name()}
}

// pass runs what a provisioning pass runs: the claim, then provision.
func (g *recreatedRig) pass(t *testing.T) (*facts, bool) {
	t.Helper()
	return g.passOn(t, "logs")
}

func (g *recreatedRig) fresh(t *testing.T) *v1.BucketyClaim {
	t.Helper()
	cl, err := g.r.Claims.Fresh(context.Background(), g.claim)
	if err != nil || cl == nil {
		t.Fatalf("read the claim: %v, %v", cl, err)
	}
	return cl
}

// recordOf is the owner record the bucket carries, nil for none.
func (g *recreatedRig) recordOf(name string) *drivers.OwnerRecord {
	g.owners.mu.Lock()
	defer g.owners.mu.Unlock()
	rec, ok := g.owners.recs[name]
	if !ok {
		return nil
	}
	return &rec
}

// dropRecord takes name's record away, as deleting the bucket takes its
// tags.
func (g *recreatedRig) dropRecord(name string) {
	g.owners.mu.Lock()
	defer g.owners.mu.Unlock()
	delete(g.owners.recs, name)
}

// replaceByStranger deletes bucket logs with its tags, as an
// administrator on the server does, and makes one of the name, holding
// records, without buckety's tags, as an application or Terraform does.
func (g *recreatedRig) replaceByStranger(t *testing.T, records int) {
	t.Helper()
	if err := g.be.Delete(context.Background(), drivers.Resource{Name: "logs"}); err != nil {
		t.Fatal(err)
	}
	g.dropRecord("logs")
	g.be.Put("logs", records)
}

func (g *recreatedRig) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-g.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestRecreatedBucketIsNotTaken: Buckety a/logs (retentionPolicy Delete)
// created bucket logs on a backend that keeps owner records with the
// resources (a bucket's tags), and its claim records that its record was
// written there (spec.ownerRecorded). An administrator deleted the bucket
// on the server, and before buckety's next pass someone outside buckety
// created bucket logs again and wrote data to it, without buckety's
// tags. That bucket is not taken for a/logs': no record is written to
// it, nothing granted, Ready is False (a refusal, on the slow backoff)
// naming the bucket and the way out; a drain request is refused and
// deletes nothing; the Buckety's deletion leaves it in place, as Retain
// would, with a Warning event. A maintainer who clears the claim's flag
// has buckety take it as it is. Before, the claim Created and the
// Buckety's status.provenance made every pass trust it: this Buckety's
// record was written onto the stranger's bucket, a drain emptied it, and
// the deletion deleted it.
func TestRecreatedBucketIsNotTaken(t *testing.T) {
	ctx := context.Background()
	g := newRecreatedRig(t, false)

	f, ok := g.pass(t)
	if !ok {
		t.Fatalf("first pass: want bucket logs created, got failure %v, claimErr %v", f.Err(), f.claimErr)
	}
	if rec := g.recordOf("logs"); rec == nil || rec.UID != "uid-logs" {
		t.Fatalf("first pass: want the record held for uid-logs, got %+v", rec)
	}
	if cl := g.fresh(t); cl.Spec.Phase != v1.ClaimCreated {
		t.Fatalf("first pass: want the claim Created, got %s", cl.Spec.Phase)
	} else if !cl.Spec.OwnerRecorded {
		t.Error("first pass: want the claim to record that its owner record is on the bucket (spec.ownerRecorded)")
	}
	if g.b.Status.Provenance != v1.ProvenanceCreated {
		t.Fatalf("first pass: want status.provenance Created, got %q", g.b.Status.Provenance)
	}

	g.replaceByStranger(t, 5)
	ensures := g.be.Calls("ensure")
	f, ok = g.pass(t)
	if ok || f.provisioned {
		t.Errorf("after the stranger's create: want the pass refused, got provisioned")
	}
	if rec := g.recordOf("logs"); rec != nil {
		t.Errorf("want no owner record written to the stranger's bucket, got %+v", rec)
	}
	if got := g.be.Calls("ensure"); got != ensures {
		t.Errorf("want nothing ensured on the stranger's bucket, got %d ensures", got-ensures)
	}
	ready := readiness(g.b, f).ready
	if ready.Status != metav1.ConditionFalse || ready.Reason != v1.ReasonResourceReplaced || !strings.Contains(ready.Message, "logs on backend s3") ||
		!strings.Contains(ready.Message, "kubectl patch bucketyclaim "+g.claim) || !strings.Contains(ready.Message, "delete or rename") {
		t.Errorf("want Ready False naming the bucket and the way out, got %s %s: %q", ready.Status, ready.Reason, ready.Message)
	}
	if got := failure(f); got != retry.Permanent {
		t.Errorf("want the refusal retried on the slow backoff (Permanent), got %v", got)
	}

	// A drain request: refused, the stranger's data kept.
	g.b.Spec.Drain = &v1.DrainSpec{Request: "r1"}
	start := metav1.NewTime(f.now.Add(-time.Minute))
	g.b.Status.Drain = &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, UID: g.b.UID, StartTime: &start, LastProgressTime: &start}
	cur := &v1.Buckety{}
	if err := g.r.Client.Get(ctx, client.ObjectKeyFromObject(g.b), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Drain = g.b.Spec.Drain
	if err := g.r.Client.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	cur.Status.Drain = g.b.Status.Drain
	if err := g.r.Client.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	g.r.drainPass(ctx, g.b, g.e, f)
	if s, _ := g.be.Get("logs"); s.Records != 5 {
		t.Errorf("drain: want the stranger's 5 records kept, got %d", s.Records)
	}
	if st := g.b.Status.Drain; st.Phase != v1.DrainPhaseRefused || !strings.Contains(st.Message, "not this Buckety's to drain") {
		t.Errorf("drain: want it refused, saying why, got %s: %q", st.Phase, st.Message)
	}
	// So is it by a pass whose owner check trusted the record this
	// process remembered (provisioned): the step reads it fresh.
	g.b.Status.Drain = &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, UID: g.b.UID, StartTime: &start, LastProgressTime: &start}
	g.r.drainPass(ctx, g.b, g.e, &facts{resourceName: "logs", now: f.now, provisioned: true, claim: g.fresh(t)})
	if s, _ := g.be.Get("logs"); s.Records != 5 {
		t.Errorf("drain after a trusting pass: want the stranger's 5 records kept, got %d", s.Records)
	}
	if st := g.b.Status.Drain; st.Phase != v1.DrainPhaseRefused || !strings.Contains(st.Message, "kubectl patch bucketyclaim") {
		t.Errorf("drain after a trusting pass: want it refused, saying what to do, got %s: %q", st.Phase, st.Message)
	}
	g.drainEvents()

	// The Buckety's deletion, retentionPolicy Delete: the bucket stays.
	_, done, deleted, err := g.r.deleteOrRetain(ctx, g.b, g.fresh(t), &facts{})
	if err != nil {
		t.Fatal(err)
	}
	if s, there := g.be.Get("logs"); !there || s.Records != 5 {
		t.Fatalf("delete: want the stranger's bucket left with its 5 records, got there %v, %+v", there, s)
	}
	if !done || deleted {
		t.Errorf("delete: want the deletion finished as Retain would (done, not deleted), got done %v, deleted %v", done, deleted)
	}
	evs := g.drainEvents()
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+v1.EventRetained) || !strings.Contains(evs[0], "retentionPolicy Delete does not delete it") {
		t.Errorf("delete: want one Warning %s event saying the bucket is kept, got %q", v1.EventRetained, evs)
	}

	// A maintainer who knows it is a/logs' bucket clears the flag.
	cl := g.fresh(t)
	cl.Spec.OwnerRecorded = false
	if err := g.r.Client.Update(ctx, cl); err != nil {
		t.Fatal(err)
	}
	g.b.Spec.Drain, g.b.Status.Drain = nil, nil
	f, ok = g.pass(t)
	if !ok {
		t.Fatalf("flag cleared: want the bucket taken as it is, got failure %v, claimErr %v", f.Err(), f.claimErr)
	}
	if rec := g.recordOf("logs"); rec == nil || rec.UID != "uid-logs" {
		t.Errorf("flag cleared: want the record held for uid-logs, got %+v", rec)
	}
	if cl := g.fresh(t); !cl.Spec.OwnerRecorded {
		t.Error("flag cleared: want spec.ownerRecorded recorded again once the record is written")
	}
}

// TestRecordedClaimRules: where the flag is set and what it changes
// beside the stranger's bucket. A claim of an older release (no flag)
// whose bucket stands without a record is trusted as before, its record
// written, and gets the flag. A flagged claim whose bucket is gone has it
// created again, recorded, and keeps the flag. A backend whose records
// are kept in a registry apart from the resources (kadm's, with topic
// IDs of its own) never gets the flag.
func TestRecordedClaimRules(t *testing.T) {
	t.Run("legacy claim, no record: trusted, then flagged", func(t *testing.T) {
		g := newRecreatedRig(t, false)
		if _, ok := g.pass(t); !ok {
			t.Fatal("first pass: want bucket logs created")
		}
		// As an older release left it: no flag, no record.
		cl := g.fresh(t)
		cl.Spec.OwnerRecorded = false
		if err := g.r.Client.Update(context.Background(), cl); err != nil {
			t.Fatal(err)
		}
		g.dropRecord("logs")
		g.be.Put("logs", 2)
		f, ok := g.pass(t)
		if !ok {
			t.Fatalf("want the legacy claim's bucket trusted, got failure %v, claimErr %v", f.Err(), f.claimErr)
		}
		if rec := g.recordOf("logs"); rec == nil || rec.UID != "uid-logs" {
			t.Errorf("want the record written, got %+v", rec)
		}
		if !g.fresh(t).Spec.OwnerRecorded {
			t.Error("want the claim flagged once its record is written")
		}
	})
	t.Run("flagged, bucket gone: created again", func(t *testing.T) {
		g := newRecreatedRig(t, false)
		if _, ok := g.pass(t); !ok {
			t.Fatal("first pass: want bucket logs created")
		}
		g.replaceByStranger(t, 0)
		if err := g.be.Delete(context.Background(), drivers.Resource{Name: "logs"}); err != nil {
			t.Fatal(err)
		}
		f, ok := g.pass(t)
		if !ok {
			t.Fatalf("want the bucket created again, got failure %v, claimErr %v", f.Err(), f.claimErr)
		}
		if _, there := g.be.Get("logs"); !there {
			t.Error("want bucket logs there again")
		}
		if rec := g.recordOf("logs"); rec == nil || rec.UID != "uid-logs" {
			t.Errorf("want the new bucket's record written, got %+v", rec)
		}
		if !g.fresh(t).Spec.OwnerRecorded {
			t.Error("want the claim to keep its flag")
		}
	})
	t.Run("registry kept apart: never flagged", func(t *testing.T) {
		g := newRecreatedRig(t, true)
		if _, ok := g.pass(t); !ok {
			t.Fatal("first pass: want bucket logs created")
		}
		if rec := g.recordOf("logs"); rec == nil || rec.UID != "uid-logs" {
			t.Errorf("want the record written, got %+v", rec)
		}
		if g.fresh(t).Spec.OwnerRecorded {
			t.Error("want no flag where the records are kept apart from the resources")
		}
	})
}

// TestRecordedFlagFollowsTheRecord: a claim gets spec.ownerRecorded only
// once its bucket's record is written (a write of the claim of its own,
// after its create), so the flag always means that this very bucket held
// the record. A Buckety whose first create's record write was lost is
// not refused its own bucket. And a Buckety that moved to another bucket
// (spec.name) keeps the flag on its old claim: when its old bucket is
// replaced by a stranger's, the Buckety's deletion with retentionPolicy
// Delete leaves that bucket as it is (a claim flagged from its birth
// took the stranger's bucket for the moved Buckety's own new one).
func TestRecordedFlagFollowsTheRecord(t *testing.T) {
	g := newRecreatedRig(t, false)
	so := &switchedOwners{memOwners: g.owners, failWrites: true}
	g.e.Owners = so
	g.pass(t)
	if g.fresh(t).Spec.OwnerRecorded {
		t.Error("a create whose record write failed: want no flag")
	}
	so.failWrites = false
	// An empty bucket without a record, never reported provisioned:
	// createdElsewhere's rules (it settles before it is taken), not the
	// refusal.
	if f, _ := g.pass(t); f.recordGone != "" || f.refused {
		t.Fatalf("the next pass: want the Buckety's own bucket not refused, got %q", f.recordGone)
	}

	g = newRecreatedRig(t, false)
	if _, ok := g.pass(t); !ok {
		t.Fatal("first pass: want bucket logs created")
	}
	if cl := g.fresh(t); !cl.Spec.OwnerRecorded || cl.ResourceVersion != "2" {
		t.Errorf("want the flag written once the record is (the claim's second write), got %v at resourceVersion %s", cl.Spec.OwnerRecorded, cl.ResourceVersion)
	}
	// Moved to logs2; logs replaced by a stranger's; the Buckety deleted.
	if f, ok := g.passOn(t, "logs2"); !ok {
		t.Fatalf("move to logs2: %v", f.Err())
	}
	g.b.Status.Provenance, g.b.Status.BackendResourceName = v1.ProvenanceCreated, "logs2"
	g.replaceByStranger(t, 3)
	old, err := g.r.Claims.Fresh(context.Background(), g.claim)
	if err != nil || old == nil || !old.Spec.OwnerRecorded {
		t.Fatalf("want the old claim on logs flagged, got %+v, %v", old, err)
	}
	g.drainEvents()
	if _, _, deleted, err := g.r.deleteOrRetain(context.Background(), g.b, old, &facts{}); err != nil || deleted {
		t.Fatalf("delete through the old claim: want logs retained, got deleted %v, %v", deleted, err)
	}
	if s, there := g.be.Get("logs"); !there || s.Records != 3 {
		t.Errorf("want the stranger's logs kept with its 3 records, got there %v, %+v", there, s)
	}
	if evs := g.drainEvents(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+v1.EventRetained) {
		t.Errorf("want one Warning %s event, got %q", v1.EventRetained, evs)
	}
}

// lyingInspect is a backend whose Inspect answers "missing" while lies
// counts down: a HEAD answered 404 by a node whose bucket metadata lags.
type lyingInspect struct {
	*drivertest.Backend
	lies int
}

func (l *lyingInspect) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	if l.lies > 0 {
		l.lies--
		return drivers.Inspection{}, nil
	}
	return l.Backend.Inspect(ctx, r)
}

// TestReplacedBucketStaysRefusedThroughALyingInspect: a Buckety refusing
// the stranger's bucket under its name keeps refusing it when one check
// of the bucket is answered "missing" by a lagging node: the flag is not
// cleared on that word (only the Buckety's own create clears it), so no
// later pass takes the bucket, writes its record to it or grants on it.
func TestReplacedBucketStaysRefusedThroughALyingInspect(t *testing.T) {
	g := newRecreatedRig(t, false)
	if _, ok := g.pass(t); !ok {
		t.Fatal("first pass: want bucket logs created")
	}
	g.replaceByStranger(t, 2)
	li := &lyingInspect{Backend: g.be, lies: 1}
	g.e.Backend = li
	for i := range 3 {
		g.pass(t)
		if rec := g.recordOf("logs"); rec != nil {
			t.Fatalf("pass %d: want no record written to the stranger's bucket, got %+v", i, rec)
		}
	}
	if !g.fresh(t).Spec.OwnerRecorded {
		t.Error("want the flag kept")
	}
	f, _ := g.pass(t)
	if r := readiness(g.b, f).ready; r.Reason != v1.ReasonResourceReplaced {
		t.Errorf("want Ready ResourceReplaced, got %s: %s", r.Reason, r.Message)
	}
}

// switchedOwners is memOwners whose writes fail while failWrites is set
// (a lost reply, a crash before the write), and whose service keeps no
// records while unkept is set (VersityGW on a store without tags, or a
// proxy answering NotImplemented).
type switchedOwners struct {
	*memOwners
	failWrites, unkept bool
}

func (o *switchedOwners) OwnerRecords(ctx context.Context) (bool, string, error) {
	if o.unkept {
		return false, "NotImplemented", nil
	}
	return o.memOwners.OwnerRecords(ctx)
}

func (o *switchedOwners) WriteOwner(ctx context.Context, r drivers.Resource, rec *drivers.OwnerRecord) error {
	if o.failWrites || o.unkept {
		return context.DeadlineExceeded
	}
	return o.memOwners.WriteOwner(ctx, r, rec)
}

// passOn is pass for the Buckety's resource name (a spec.name change
// moves it to another).
func (g *recreatedRig) passOn(t *testing.T, name string) (*facts, bool) {
	t.Helper()
	return claimAndProvision(t, g.r, g.b, g.e, &facts{resourceName: name, now: time.Now()})
}

// claimAndProvision is the provisioning part of a pass of b on e with f:
// the claim, which must be taken, then provision.
func claimAndProvision(t *testing.T, r *Reconciler, b *v1.Buckety, e *backends.Entry, f *facts) (*facts, bool) {
	t.Helper()
	ctx := context.Background()
	mergeDefaults(e, b, f)
	if !r.claim(ctx, b, e, f) {
		t.Fatalf("claim: want it taken, got claimErr %v, conflict %v", f.claimErr, f.conflict)
	}
	ok, err := r.provision(ctx, b, e, f)
	if err != nil {
		t.Fatal(err)
	}
	return f, ok
}

// TestOwnBucketWhoseRecordWriteIsLostIsNotRefused: the Buckety's own
// bucket, created by a pass whose record write never happened (a lost
// reply, a crash), is not refused by the next pass, whatever the claim's
// flag said of the resource before: a bucket deleted out of band and
// created again (the flag cleared once the create made it, before the
// record's write); a Buckety moved by spec.name to another bucket (a
// claim of its own, flagged only once its record is written); and a
// bucket provisioned while the service kept no tags, once it keeps them
// (no flag where no record was written). Each is taken and recorded,
// and flagged, once the record can be written.
func TestOwnBucketWhoseRecordWriteIsLostIsNotRefused(t *testing.T) {
	setup := func(t *testing.T) (*recreatedRig, *switchedOwners) {
		g := newRecreatedRig(t, false)
		so := &switchedOwners{memOwners: g.owners}
		g.e.Owners = so
		return g, so
	}
	settled := func(t *testing.T, g *recreatedRig, name string) {
		t.Helper()
		f, ok := g.passOn(t, name)
		if f.recordGone != "" || f.refused {
			t.Fatalf("want the Buckety's own bucket %s not refused, got %q", name, f.recordGone)
		}
		if !ok {
			t.Fatalf("want bucket %s provisioned, got failure %v, claimErr %v", name, f.Err(), f.claimErr)
		}
		if rec := g.recordOf(name); rec == nil || rec.UID != "uid-logs" {
			t.Errorf("want %s's record written, got %+v", name, rec)
		}
		cl, err := g.r.Claims.Fresh(context.Background(), g.r.key(g.e, name).Name())
		if err != nil || cl == nil || !cl.Spec.OwnerRecorded {
			t.Errorf("want %s's claim flagged once its record is written, got %+v, %v", name, cl, err)
		}
	}

	t.Run("created again, its record write lost", func(t *testing.T) {
		g, so := setup(t)
		if _, ok := g.pass(t); !ok {
			t.Fatal("first pass: want bucket logs created")
		}
		if err := g.be.Delete(context.Background(), drivers.Resource{Name: "logs"}); err != nil {
			t.Fatal(err)
		}
		g.dropRecord("logs")
		so.failWrites = true
		f, _ := g.pass(t)
		if _, there := g.be.Get("logs"); !there {
			t.Fatalf("want bucket logs created again, got none (failure %v)", f.Err())
		}
		if f.recordGone != "" {
			t.Fatalf("the pass creating it again: want no refusal, got %q", f.recordGone)
		}
		so.failWrites = false
		settled(t, g, "logs")
	})
	t.Run("moved by spec.name, its record write lost", func(t *testing.T) {
		g, so := setup(t)
		if _, ok := g.pass(t); !ok {
			t.Fatal("first pass: want bucket logs created")
		}
		so.failWrites = true
		g.passOn(t, "logs2")
		if _, there := g.be.Get("logs2"); !there {
			t.Fatal("want bucket logs2 created")
		}
		so.failWrites = false
		g.b.Status.Provenance, g.b.Status.BackendResourceName = v1.ProvenanceCreated, "logs"
		settled(t, g, "logs2")
	})
	t.Run("provisioned while the service kept no tags", func(t *testing.T) {
		g, so := setup(t)
		so.unkept = true
		g.pass(t)
		if _, there := g.be.Get("logs"); !there {
			t.Fatal("want bucket logs created")
		}
		g.b.Status.Provenance, g.b.Status.BackendResourceName = v1.ProvenanceCreated, "logs"
		so.unkept = false
		settled(t, g, "logs")
	})
}
