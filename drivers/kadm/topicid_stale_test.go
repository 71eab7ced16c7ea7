package kadm

import (
	"context"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestStaleMetadataOfTheDeletedTopicIsNotARefusal: a Buckety's topic is
// deleted out of band and created again by buckety (its record names the
// new topic). A broker whose metadata is behind the deletion may still
// answer the deleted topic's ID: that was refused as a topic someone else
// made, which since the refusal is ResourceReplaced revokes the
// credentials of the Buckety's accesses and ends its deletion as Retain.
// The replica that created the topic again knows the old ID for one found
// deleted; another replica reads the topic's metadata again before a
// refusal stands. Neither refuses; a stranger's topic is still refused.
func TestStaleMetadataOfTheDeletedTopicIsNotARefusal(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	name := "lagging"
	if res := f.ensure(t, name, params); !res.Created {
		t.Fatalf("want topic %s created, got %+v", name, res)
	}
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: name, JustCreated: true}, heldBy(name)); err != nil {
		t.Fatal(err)
	}
	deleted := f.topicIDOf(t, name)
	f.deleteOutOfBand(t, name)
	if res := f.ensure(t, name, params); !res.Created {
		t.Fatalf("Ensure of a topic deleted out of band: want it created again, got %+v", res)
	}
	now := f.topicIDOf(t, name)
	if rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: name}); err != nil || rec == nil || rec.ResourceID != formatTopicID(now) {
		t.Fatalf("want the record naming the topic created again (%s), got %+v %v", formatTopicID(now), rec, err)
	}
	other := f.openAnother(t)
	if _, err := other.ReadOwner(ctx, drivers.Resource{Name: name}); err != nil {
		t.Fatal(err)
	}
	for _, be := range []struct {
		what string
		b    *Backend
	}{{"the replica that created it again", f.backend}, {"another replica", other}} {
		for _, op := range []string{opConverge, opDrain, opDelete} {
			// What a broker behind the deletion answers.
			_, err := be.b.checkTopicIDFresh(ctx, op, name, deleted)
			if err == nil || drivers.IsReplaced(err) || drivers.IsRefused(err) {
				t.Errorf("%s, %s, the deleted topic's ID from a broker behind: want an error read again on the next pass, not a refusal, got %v", be.what, op, err)
			}
		}
	}
	// A stranger's topic under the name is refused as before.
	theirs := f.replaceOutOfBand(t, name)
	for _, be := range []*Backend{f.backend, other} {
		_, err := be.checkTopicIDFresh(ctx, opConverge, name, theirs)
		wantReplaced(t, "a stranger's topic", err, name, opConverge, now, theirs)
	}
}

// TestClearedRecordIsNotBoundToTheDeletedTopic: a Buckety's topic is
// deleted out of band; Ensure clears the record's ID before it creates the
// topic again, and the create's answer is lost (the broker made the
// topic). A broker behind the deletion then answers the deleted topic's
// ID: a record without an ID trusted it and was given it, and the
// Buckety's own new topic was refused for good from then on. It is read
// again instead: the new topic is bound. And where the topic was never
// gone (a broker that did not know it yet answered the name missing, and
// the create found it there), two reads that answer it are taken for the
// topic's, which is bound again.
func TestClearedRecordIsNotBoundToTheDeletedTopic(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	record := func(name string) string {
		t.Helper()
		rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: name})
		if err != nil || rec == nil {
			t.Fatalf("read the record of %s: %+v %v", name, rec, err)
		}
		return rec.ResourceID
	}
	made := func(name string) topicID {
		t.Helper()
		if res := f.ensure(t, name, nil); !res.Created {
			t.Fatalf("want topic %s created, got %+v", name, res)
		}
		if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: name, JustCreated: true}, heldBy(name)); err != nil {
			t.Fatal(err)
		}
		return f.topicIDOf(t, name)
	}

	// bound checks that topic id under name is trusted, to be recorded,
	// and that the record is given its ID.
	bound := func(name string, id topicID, what string) {
		t.Helper()
		if stamp, err := f.backend.checkTopicIDFresh(ctx, opConverge, name, id); err != nil || !stamp {
			t.Fatalf("%s: want it trusted and to be recorded, got %v %v", what, stamp, err)
		}
		if err := f.backend.bindTopicID(ctx, opConverge, name, id); err != nil {
			t.Fatal(err)
		}
		if got := record(name); got != formatTopicID(id) {
			t.Errorf("%s: want the record naming it (%s), got %s", what, formatTopicID(id), got)
		}
	}

	name := "lost-answer"
	deleted := made(name)
	f.deleteOutOfBand(t, name)
	if was, err := f.backend.unbindTopicID(ctx, name); err != nil || was != formatTopicID(deleted) {
		t.Fatalf("clear the record's ID before the create: want %s cleared, got %q %v", formatTopicID(deleted), was, err)
	}
	// The create whose answer was lost.
	if _, err := f.admin.CreateTopic(ctx, 1, -1, nil, name); err != nil {
		t.Fatal(err)
	}
	ours := f.topicIDOf(t, name)
	if _, err := f.backend.checkTopicIDFresh(ctx, opConverge, name, deleted); err == nil || drivers.IsRefused(err) {
		t.Errorf("the deleted topic's ID from a broker behind, under a record without an ID: want an error read again on the next pass, got %v", err)
	}
	if got := record(name); got != "" {
		t.Errorf("want the record without an ID still, got %s (the deleted topic's is %s)", got, formatTopicID(deleted))
	}
	if err := f.backend.bindTopicID(ctx, opConverge, name, deleted); err == nil {
		t.Error("want the deleted topic's ID not bound to the record")
	}
	bound(name, ours, "the topic the lost create made")

	// Never gone: the name was answered missing by a broker that did not
	// know the topic yet, and the create found it there.
	kept := "never-gone"
	id := made(kept)
	if _, err := f.backend.unbindTopicID(ctx, kept); err != nil {
		t.Fatal(err)
	}
	bound(kept, id, "a topic never gone, answered by two reads")
}
