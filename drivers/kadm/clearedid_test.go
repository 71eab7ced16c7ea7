package kadm

import (
	"context"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestClearedRecordIsNotBoundToTheDeletedTopicAfterARestart: a Buckety's
// topic is deleted out of band; Ensure clears the record's ID before it
// creates the topic again, and the create's answer is lost (the broker
// made the topic). The pass after it runs on another backend: the
// controller restarted, or the Buckety moved to another replica (here one
// that served it before, and still remembers the deleted topic). The
// memory that the old ID was found deleted was the first backend's alone:
// a broker behind the deletion answering the old ID (the replica's
// observation from before it) had the record, without an ID, bound to the
// deleted topic, and from then on the Buckety's own topic was refused as
// one someone else made (its accesses' credentials revoked, its deletion
// ended as Retain) until an operator removed the record by hand. The
// record keeps the ID it cleared: the old ID is read again instead of
// bound, and the new topic is bound once read. A topic that was never gone
// (the name read missing by a broker that did not know it yet) is still
// bound on two reads that answer it, by a backend that has none of the
// first one's memory.
func TestClearedRecordIsNotBoundToTheDeletedTopicAfterARestart(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	// told opens a backend of the same installation, as the controller
	// does after a restart.
	told := func() *Backend { return toldBackend(t, f) }
	record := func(name string) string {
		t.Helper()
		rec, err := told().ReadOwner(ctx, drivers.Resource{Name: name})
		if err != nil || rec == nil {
			t.Fatalf("read the record of %s: %+v %v", name, rec, err)
		}
		return rec.ResourceID
	}
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "restarted", Parameters: params}
	if res := f.ensure(t, r.Name, params); !res.Created {
		t.Fatalf("want topic %s created, got %+v", r.Name, res)
	}
	writeHeld(t, f.backend, r.Name)
	deleted := f.topicIDOf(t, r.Name)
	// The replica the Buckety moves to served it before: it observed the
	// topic, and checked its ID against the record.
	after := told()
	if _, err := after.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := after.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}

	f.deleteOutOfBand(t, r.Name)
	if was, err := f.backend.unbindTopicID(ctx, r.Name); err != nil || was != formatTopicID(deleted) {
		t.Fatalf("clear the record's ID before the create: want %s cleared, got %q %v", formatTopicID(deleted), was, err)
	}
	// The create whose answer was lost; the backend that sent it is not
	// asked again.
	if _, err := f.admin.CreateTopic(ctx, 1, -1, nil, r.Name); err != nil {
		t.Fatal(err)
	}
	ours := f.topicIDOf(t, r.Name)
	if got := record(r.Name); got != "" {
		t.Fatalf("want the record without an ID after the clear, got %s", got)
	}

	// The next pass, on the other backend: the controller's owner check
	// reads the record fresh.
	rec, err := after.ReadOwner(ctx, drivers.Resource{Name: r.Name})
	if err != nil || rec == nil {
		t.Fatalf("the controller's read of the record: want it, got %+v %v", rec, err)
	}
	if rec.ClearedResourceID != "" {
		t.Errorf("ReadOwner: want the record without the driver's cleared ID, got %s", rec.ClearedResourceID)
	}
	for _, op := range []string{opConverge, opDrain, opDelete} {
		// What a broker behind the deletion answers.
		_, err := after.checkTopicIDFresh(ctx, op, r.Name, deleted)
		if err == nil || drivers.IsRefused(err) || drivers.IsReplaced(err) {
			t.Errorf("%s, the deleted topic's ID from a broker behind, on a backend without the first one's memory: want an error read again on the next pass, got %v", op, err)
		}
	}
	if err := after.bindTopicID(ctx, opConverge, r.Name, deleted); err == nil {
		t.Error("want the deleted topic's ID not bound to the record")
	}
	if got := record(r.Name); got != "" {
		t.Errorf("want the record without an ID still, got %s (the deleted topic's is %s)", got, formatTopicID(deleted))
	}
	// The controller writes its record again (a state change, a
	// handover): the replica's memory of the deleted topic is not filled
	// in.
	if err := after.WriteOwner(ctx, drivers.Resource{Name: r.Name}, heldBy(r.Name)); err != nil {
		t.Fatal(err)
	}
	if got := record(r.Name); got != "" {
		t.Errorf("the controller's record written again: want it without an ID still, got %s (the deleted topic's is %s)", got, formatTopicID(deleted))
	}
	// The replica's Ensure with the controller's MaxAge acts on its
	// observation of the deleted topic first, as on a broker behind.
	aged := r
	aged.MaxAge = time.Hour
	if _, err := after.Ensure(ctx, aged); err != nil {
		t.Errorf("Ensure of the Buckety's own topic, its observation the deleted topic's: want it converged, got %v", err)
	}
	if got := record(r.Name); got != formatTopicID(ours) {
		t.Errorf("want the record naming the topic the lost create made (%s), got %q (the deleted topic's is %s)", formatTopicID(ours), got, formatTopicID(deleted))
	}
	for _, be := range []*Backend{after, told()} {
		if _, err := be.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
			t.Fatal(err)
		}
		if _, err := be.Ensure(ctx, r); err != nil {
			t.Errorf("Ensure of the Buckety's own topic, bound: want it converged, got %v", err)
		}
		if rec := be.tableRecord(r.Name); rec == nil || rec.ClearedResourceID != "" {
			t.Errorf("the record bound to the new topic: want no cleared ID kept, got %+v", rec)
		}
	}

	// Never gone: the name was answered missing by a broker that did not
	// know the topic yet, the record was cleared, and the create found
	// the topic there. A backend with none of the first one's memory
	// binds it on two reads.
	kept := drivers.Resource{Name: "never-gone-restarted", Parameters: params}
	id, fresh := neverGone(t, f, kept)
	if fresh.err != nil {
		t.Errorf("Ensure of a topic never gone, on a backend opened afresh: want it converged, got %v", fresh.err)
	}
	if got := record(kept.Name); got != formatTopicID(id) {
		t.Errorf("a topic never gone, answered by two reads: want the record naming it (%s), got %q", formatTopicID(id), got)
	}
}

// TestNeverGoneOnceIsNotNeverGoneAgain: a replica found the name's topic
// never gone (two reads answered the ID its record had cleared) and bound
// it. Later the topic is deleted out of band for real, another replica
// clears its ID from the record and creates the topic again, and that
// create's answer is lost. Back on the first replica, a broker behind the
// deletion answers the old ID: the first replica's memory that two reads
// had answered it once bound the record to the deleted topic at once, and
// the Buckety's own new topic was refused from then on. That memory holds
// only for the record it was judged under: the old ID is read again.
func TestNeverGoneOnceIsNotNeverGoneAgain(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	told := func() *Backend { return toldBackend(t, f) }
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "twice", Parameters: params}
	// Never gone, on the first replica: the record cleared, the topic
	// there all along, bound on two reads.
	first, one := neverGone(t, f, r)
	if one.err != nil {
		t.Fatalf("a topic never gone: want it converged and bound, got %v", one.err)
	}
	if rec := one.be.tableRecord(r.Name); rec == nil || rec.ResourceID != formatTopicID(first) {
		t.Fatalf("a topic never gone: want the record naming it, got %+v", rec)
	}
	// Deleted for real; another replica clears the record and creates
	// the topic again, its answer lost.
	two := told()
	if _, err := two.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	f.deleteOutOfBand(t, r.Name)
	if was, err := two.unbindTopicID(ctx, r.Name); err != nil || was != formatTopicID(first) {
		t.Fatalf("want %s cleared, got %q %v", formatTopicID(first), was, err)
	}
	if _, err := f.admin.CreateTopic(ctx, 1, -1, nil, r.Name); err != nil {
		t.Fatal(err)
	}
	// Back on the first replica, its registry caught up, a broker behind
	// answers the deleted topic.
	if _, err := one.be.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	if err := one.be.catchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := one.be.checkTopicIDFresh(ctx, opConverge, r.Name, first); err == nil || drivers.IsReplaced(err) {
		t.Errorf("the deleted topic's ID, on the replica that once found it never gone: want an error read again on the next pass, got %v", err)
	}
	if err := one.be.bindTopicID(ctx, opConverge, r.Name, first); err == nil {
		t.Error("want the deleted topic's ID not bound to the record")
	}
	if rec, err := told().ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || rec == nil || rec.ResourceID != "" {
		t.Errorf("want the record without an ID still, got %+v %v (the deleted topic's is %s)", rec, err, formatTopicID(first))
	}
}

// toldBackend opens a backend of f's installation (east), as the
// controller does after a restart.
func toldBackend(t *testing.T, f *fixture) *Backend {
	t.Helper()
	be := f.openAnother(t)
	be.SetInstallation("east", nil)
	return be
}

// ensured is a backend and what its Ensure answered.
type ensured struct {
	be  *Backend
	err error
}

// neverGone creates r's topic with a held record, clears the record's ID
// as before a create, and has a backend opened afresh read the record and
// Ensure r (the topic there all along): it returns the topic's ID and
// that backend with its Ensure's error.
func neverGone(t *testing.T, f *fixture, r drivers.Resource) (topicID, ensured) {
	t.Helper()
	ctx := context.Background()
	if res := f.ensure(t, r.Name, r.Parameters); !res.Created {
		t.Fatalf("want topic %s created, got %+v", r.Name, res)
	}
	writeHeld(t, f.backend, r.Name)
	id := f.topicIDOf(t, r.Name)
	if _, err := f.backend.unbindTopicID(ctx, r.Name); err != nil {
		t.Fatal(err)
	}
	be := toldBackend(t, f)
	if _, err := be.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	_, err := be.Ensure(ctx, r)
	return id, ensured{be: be, err: err}
}
