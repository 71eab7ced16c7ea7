package kadm

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestRememberedDeletionDoesNotSkipTheNextHoldersTopic: replica A deletes
// a Buckety's topic and remembers the deletion (its ID) for an hour.
// Another Buckety takes the name meanwhile: replica B creates the topic
// again, records it (its ID in the owner record), and its tenant writes
// to it. A then holds that Buckety's shard and deletes it. A took the
// topic there now, of another ID than the one it remembered deleting,
// for someone else's, reported the deletion done and left the topic and
// its data: the controller then tombstoned the record and released the
// claim, telling the tenant its topic was deleted. A topic whose owner
// record names its ID is the record holder's and is deleted; one that no
// record names stays (TestLostDeleteReplyLeavesATopicCreatedSince).
func TestRememberedDeletionDoesNotSkipTheNextHoldersTopic(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	a := f.backend
	b, _ := f.openOnRegistry(t, a.cfg.registryTopic())
	b.SetInstallation("east", nil)
	r := drivers.Resource{Name: "orders"}
	if _, err := a.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	writeHeld(t, a, r.Name)
	first := f.topicIDOf(t, r.Name)
	if err := a.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	if ok, _ := topicExists(t, f.kgo, r.Name); ok {
		t.Fatal("the first Buckety's topic: want it deleted")
	}

	if res, err := b.Ensure(ctx, r); err != nil || !res.Created {
		t.Fatalf("the next Buckety's topic: want it created by replica B, got %+v, %v", res, err)
	}
	writeHeld(t, b, r.Name)
	second := f.topicIDOf(t, r.Name)
	if second == first {
		t.Fatal("the test expects the topic created again to have a new ID")
	}
	if err := f.kgo.ProduceSync(ctx, &kgo.Record{Topic: r.Name, Value: []byte("the next holder's")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if err := a.Delete(ctx, r); err != nil {
		t.Fatalf("replica A deletes the next holder's topic: %v", err)
	}
	if ok, id := topicExists(t, f.kgo, r.Name); ok {
		t.Errorf("replica A reported the next holder's topic deleted: want it gone, got it there (ID %x)", id)
	}
}

// TestRememberedDeletionLeavesAnotherInstallationsTopic: the same, but
// the topic made under the name since is another installation's (its
// record names it and that installation): it is not this installation's
// to delete, whatever the controller read of the record before, and the
// deletion is taken as done.
func TestRememberedDeletionLeavesAnotherInstallationsTopic(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	a := f.backend
	west, _ := f.openOnRegistry(t, a.cfg.registryTopic())
	west.SetInstallation("west", nil)
	r := drivers.Resource{Name: "orders"}
	if _, err := a.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	writeHeld(t, a, r.Name)
	if err := a.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := west.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	rec := heldBy(r.Name)
	rec.Installation = "west"
	if err := west.WriteOwner(ctx, drivers.Resource{Name: r.Name, JustCreated: true}, rec); err != nil {
		t.Fatal(err)
	}
	theirs := f.topicIDOf(t, r.Name)
	if err := a.Delete(ctx, r); err != nil {
		t.Fatalf("east's retried delete: want done, got %v", err)
	}
	if ok, id := topicExists(t, f.kgo, r.Name); !ok || id != theirs {
		t.Errorf("west's topic: want it kept (ID %x), got exists=%v ID %x", theirs, ok, id)
	}
}
