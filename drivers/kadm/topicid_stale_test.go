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
