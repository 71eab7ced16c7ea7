package kadm

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// lostDeleteFixture is a backend whose client loses the answers to
// DeleteTopics while its loser is armed, and an independent client acting
// as someone else on the cluster (a producer, an administrator).
type lostDeleteFixture struct {
	backend *Backend
	loser   *replyLoser
	admin   *kadm.Client
	kgo     *kgo.Client
}

func newLostDeleteFixture(t *testing.T, opt ...kgo.Opt) *lostDeleteFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	broker := kafka.Start(t, kafka.Options{})
	// kgo sends a DeleteTopics whose answer was lost again, within the
	// request timeout; a short one makes it give up sooner.
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 2 * time.Second}}
	loser := &replyLoser{key: kmsg.DeleteTopics, all: true}
	be, opts := losingBackend(t, cfg, loser, opt...)
	other, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	return &lostDeleteFixture{backend: be, loser: loser, admin: kadm.NewClient(other), kgo: other}
}

// deleteLosingReply deletes r with every DeleteTopics answer lost (kgo
// sends the request again on a new connection until the request timeout
// runs out): the broker deletes the topic, and Delete cannot tell.
func (f *lostDeleteFixture) deleteLosingReply(t *testing.T, r drivers.Resource) {
	t.Helper()
	f.loser.armed.Store(true)
	err := f.backend.Delete(context.Background(), r)
	f.loser.armed.Store(false)
	if n := f.loser.lost.Load(); n < 1 {
		t.Fatalf("want the delete's answers lost, lost %d (err %v)", n, err)
	}
	if !drivers.IsUnavailable(err) {
		t.Fatalf("a delete whose answer was lost: want *drivers.UnavailableError, got %T %v", err, err)
	}
}

// exists reports whether the independent client finds topic, and its ID,
// in a Metadata request of its own (kadm's ListTopics may answer from the
// client's cache).
func (f *lostDeleteFixture) exists(t *testing.T, topic string) (bool, topicID) {
	t.Helper()
	return topicExists(t, f.kgo, topic)
}

// topicExists reports whether cl finds topic, and its ID, in a Metadata
// request of its own.
func topicExists(t *testing.T, cl *kgo.Client, topic string) (bool, topicID) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range resp.Topics {
		if unptr(a.Topic) != topic {
			continue
		}
		err := kerr.ErrorForCode(a.ErrorCode)
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return false, topicID{}
		}
		if err != nil {
			t.Fatalf("metadata of topic %s: %v", topic, err)
		}
		return true, a.TopicID
	}
	t.Fatalf("metadata of topic %s: the answer does not mention it", topic)
	return false, topicID{}
}

// createTheirs creates topic with the independent client, as a producer's
// auto-create or an administrator would, and writes a record to it.
func (f *lostDeleteFixture) createTheirs(t *testing.T, topic string) topicID {
	t.Helper()
	ctx := context.Background()
	resp, err := f.admin.CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil {
		t.Fatalf("create %s with another client (the name should be free): %v", topic, err)
	}
	if err := f.kgo.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("theirs")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return resp.ID
}

// TestLostDeleteReplyLeavesATopicCreatedSince: a Buckety's Delete whose
// DeleteTopics answer the network loses after the broker deleted the
// topic. Before the controller's next pass, someone else creates a topic
// of that name and writes to it. The retry used to send DeleteTopics by
// name again and delete that topic, and its record: a topic buckety never
// held. It must take the deletion as done and leave the topic alone.
func TestLostDeleteReplyLeavesATopicCreatedSince(t *testing.T) {
	f := newLostDeleteFixture(t)
	ctx := context.Background()
	r := drivers.Resource{Name: "reborn"}
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	f.deleteLosingReply(t, r)
	theirs := f.createTheirs(t, r.Name)
	if err := f.backend.Delete(ctx, r); err != nil {
		t.Fatalf("the next pass's delete: want done (the topic it deleted is gone), got %v", err)
	}
	ok, id := f.exists(t, r.Name)
	if !ok || id != theirs {
		t.Fatalf("the topic created since the lost delete: want it kept (ID %x), got exists=%v ID %x", theirs, ok, id)
	}
	offs, err := f.admin.ListEndOffsets(ctx, r.Name)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(r.Name, 0); !ok || o.Err != nil || o.Offset != 1 {
		t.Errorf("the topic created since the lost delete: want its record kept (end offset 1), got %+v %v", o, ok)
	}
}

// TestLostDeleteReplyRetrySettles: the retry of a Delete whose answer was
// lost, with nobody taking the name meanwhile, is done; a Delete of a
// topic the backend created after it deletes that topic (the name's
// remembered deletion is not a later Buckety's); and a Delete whose
// answer arrives deletes the topic.
func TestLostDeleteReplyRetrySettles(t *testing.T) {
	f := newLostDeleteFixture(t)
	ctx := context.Background()
	r := drivers.Resource{Name: "settles"}
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	f.deleteLosingReply(t, r)
	if err := f.backend.Delete(ctx, r); err != nil {
		t.Fatalf("the next pass's delete: want done, got %v", err)
	}
	if ok, _ := f.exists(t, r.Name); ok {
		t.Fatalf("topic %s after its delete settled: want it gone, it exists", r.Name)
	}
	// A later Buckety of the name: the backend creates the topic again,
	// and its Delete deletes it.
	if res, err := f.backend.Ensure(ctx, r); err != nil || !res.Created {
		t.Fatalf("Ensure of a later Buckety of the name: want created, got %+v %v", res, err)
	}
	if err := f.backend.Delete(ctx, r); err != nil {
		t.Fatal(err)
	}
	if ok, _ := f.exists(t, r.Name); ok {
		t.Errorf("topic %s of a later Buckety of the name after its Delete: want it gone, it exists", r.Name)
	}
}

// TestDeleteByIDLeavesATopicCreatedSinceTheRead: the DeleteTopics of a
// Delete is sent by the topic ID its Metadata read, so a topic deleted and
// created again under the name between the read and the request (by
// someone else) is not deleted: the broker answers UNKNOWN_TOPIC_ID.
func TestDeleteByIDLeavesATopicCreatedSinceTheRead(t *testing.T) {
	f := newLostDeleteFixture(t)
	ctx := context.Background()
	r := drivers.Resource{Name: "raced"}
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	st, err := f.backend.metadata.do(ctx, r.Name, struct{}{})
	if err != nil || !st.exists || st.id == (topicID{}) {
		t.Fatalf("metadata of %s: want it with a topic ID, got %+v %v", r.Name, st, err)
	}
	if _, err := f.admin.DeleteTopic(ctx, r.Name); err != nil {
		t.Fatal(err)
	}
	theirs := f.createTheirs(t, r.Name)
	if _, err := f.backend.deletes.do(ctx, r.Name, st.id); !errors.Is(err, kerr.UnknownTopicID) {
		t.Errorf("a deletion by the ID of a topic gone: want UNKNOWN_TOPIC_ID, got %v", err)
	}
	if ok, id := f.exists(t, r.Name); !ok || id != theirs {
		t.Errorf("the topic created since the read: want it kept (ID %x), got exists=%v ID %x", theirs, ok, id)
	}
}

// TestDeleteUnknownTopicIDOfATopicStillThere: a broker answering from
// stale metadata, or one that takes DeleteTopics v6 but not deletion by
// ID, answers UNKNOWN_TOPIC_ID for the ID a Delete read just now while the
// topic is still there. Delete used to take the answer for done, and the
// controller would release the name with the topic, and its data, left
// behind. It must read the topic again and report the deletion not
// applied; so must its next pass (not a retry of a deletion that deleted
// nothing); and once the broker deletes by ID, Delete deletes the topic.
//
// The broker is franz-go's kfake cluster in this process: only there can
// a request be answered as such a broker would (Cluster.ControlKey).
func TestDeleteUnknownTopicIDOfATopicStillThere(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker")
	}
	c, b := inProcessBackend(t, New(), kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	ctx := context.Background()
	r := drivers.Resource{Name: "not-deleted-by-id"}
	if _, err := b.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	ok, ours := topicExists(t, b.kgo, r.Name)
	if !ok || ours == (topicID{}) {
		t.Fatalf("topic %s: want it with a topic ID, got exists=%v ID %x", r.Name, ok, ours)
	}
	// While stale, every DeleteTopics entry is answered UNKNOWN_TOPIC_ID
	// (without a name, as Kafka answers an ID it does not know), and
	// nothing is deleted.
	var stale atomic.Bool
	stale.Store(true)
	c.ControlKey(kmsg.DeleteTopics.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !stale.Load() {
			return nil, nil, false
		}
		req := kreq.(*kmsg.DeleteTopicsRequest)
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		resp.Version = req.Version
		for _, rt := range req.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.TopicID, st.ErrorCode = rt.TopicID, kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	for _, pass := range []string{"the delete", "the next pass's delete"} {
		err := b.Delete(ctx, r)
		if err == nil || !errors.Is(err, kerr.UnknownTopicID) || drivers.IsRefused(err) {
			t.Errorf("%s answered UNKNOWN_TOPIC_ID for a topic still there: want an error the pass retries, got %v", pass, err)
		}
		if ok, id := topicExists(t, b.kgo, r.Name); !ok || id != ours {
			t.Fatalf("%s answered UNKNOWN_TOPIC_ID: want topic %s kept (ID %x), got exists=%v ID %x", pass, r.Name, ours, ok, id)
		}
	}
	stale.Store(false)
	if err := b.Delete(ctx, r); err != nil {
		t.Fatalf("the delete after the broker caught up: %v", err)
	}
	if ok, _ := topicExists(t, b.kgo, r.Name); ok {
		t.Errorf("topic %s after its delete: want it gone, it exists", r.Name)
	}
}

// TestDeleteWithoutTopicIDsDeletesByName: a broker too old for topic IDs
// (Kafka 2.7: Metadata without them, DeleteTopics by name only) has its
// topics deleted by name, as before IDs, and a retry after a lost answer
// is done.
func TestDeleteWithoutTopicIDsDeletesByName(t *testing.T) {
	f := newLostDeleteFixture(t, kgo.MaxVersions(kversion.V2_7_0()))
	ctx := context.Background()
	for _, lose := range []bool{false, true} {
		r := drivers.Resource{Name: fmt.Sprintf("old-broker-%v", lose)}
		if _, err := f.backend.Ensure(ctx, r); err != nil {
			t.Fatal(err)
		}
		if st, err := f.backend.metadata.do(ctx, r.Name, struct{}{}); err != nil || !st.exists || st.id != (topicID{}) {
			t.Fatalf("metadata of %s at Kafka 2.7's versions: want it without a topic ID, got %+v %v", r.Name, st, err)
		}
		if lose {
			f.deleteLosingReply(t, r)
		}
		if err := f.backend.Delete(ctx, r); err != nil {
			t.Fatalf("delete %s (answer lost before: %v): %v", r.Name, lose, err)
		}
		if ok, _ := f.exists(t, r.Name); ok {
			t.Errorf("topic %s after its Delete (answer lost before: %v): want it gone, it exists", r.Name, lose)
		}
	}
}

// TestDeletionsAreBounded: the remembered deletions expire after
// deletionTTL, hold at most maxDeletions names (the oldest dropped first),
// and a name's later deletion replaces its earlier one.
func TestDeletionsAreBounded(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	d := newDeletions()
	d.now = func() time.Time { return now }
	id := func(i int) topicID { return topicID{byte(i), byte(i >> 8), 1} }
	name := func(i int) string { return fmt.Sprintf("topic-%d", i) }
	for i := range maxDeletions + 1 {
		d.put(name(i), id(i))
	}
	if _, ok := d.get(name(0)); ok {
		t.Errorf("the oldest of %d deletions: want it dropped, it is kept", maxDeletions+1)
	}
	last := maxDeletions
	lastName := name(last)
	if got, ok := d.get(lastName); !ok || got != id(last) {
		t.Errorf("the newest deletion: want ID %x, got %x %v", id(last), got, ok)
	}
	if n := d.order.Len(); n != maxDeletions || len(d.byName) != maxDeletions {
		t.Errorf("want %d deletions kept, got %d in order and %d by name", maxDeletions, n, len(d.byName))
	}
	d.put(lastName, id(7))
	if got, _ := d.get(lastName); got != id(7) {
		t.Errorf("a name's later deletion: want ID %x, got %x", id(7), got)
	}
	now = now.Add(deletionTTL + time.Second)
	if _, ok := d.get(lastName); ok {
		t.Errorf("a deletion older than %v: want it expired, it is kept", deletionTTL)
	}
	d.put("fresh", id(1))
	if n := d.order.Len(); n != 1 {
		t.Errorf("after a put past every deletion's expiry: want only the new one kept, got %d", n)
	}
	d.forget("fresh")
	if _, ok := d.get("fresh"); ok || d.order.Len() != 0 {
		t.Errorf("a forgotten deletion: want it gone, got %v (%d kept)", ok, d.order.Len())
	}
}
