package kadm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// deleteOutOfBand deletes topic with the fixture's independent client, as
// an administrator would, and nothing else.
func (f *fixture) deleteOutOfBand(t *testing.T, topic string) {
	t.Helper()
	res, err := f.admin.DeleteTopics(context.Background(), topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("delete %s out of band: %v", topic, err)
	}
}

// TestOwnTopicCreatedAgainSurvivesALostCreateReply: a Buckety's topic is
// deleted out of band, and its Ensure creates it again, but the
// CreateTopics answer is lost (as when the process stops, or the record's
// stamp fails, after the create). The record used to be stamped only on a
// successful answer, so it kept naming the deleted topic, and every later
// Ensure refused the Buckety's own topic for good. The record loses the
// old ID before the create (write-ahead): the next Ensure converges the
// topic and binds the record to it.
func TestOwnTopicCreatedAgainSurvivesALostCreateReply(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	loser := &replyLoser{key: kmsg.CreateTopics}
	be, opts := losingBackend(t, cfg, loser)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	r := drivers.Resource{Name: "lost-again", Parameters: map[string]string{"partitions": "1"}}
	if _, err := be.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	writeHeld(t, be, r.Name)
	_, first := topicExists(t, cl, r.Name)
	res, err := adm.DeleteTopics(ctx, r.Name)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	// The create below is made only once the deletion shows.
	for ok := true; ok; ok, _ = topicExists(t, cl, r.Name) {
	}
	loser.armed.Store(true)
	if _, err := be.Ensure(ctx, r); err == nil || loser.lost.Load() != 1 {
		t.Fatalf("Ensure whose create answer is lost: want an error and one answer lost, got %v (%d lost)", err, loser.lost.Load())
	}
	ok, second := topicExists(t, cl, r.Name)
	if !ok || second == first {
		t.Fatalf("want the topic created again with a new ID (the old one %s), got exists=%v ID %s", formatTopicID(first), ok, formatTopicID(second))
	}
	if _, err := be.Ensure(ctx, r); err != nil {
		t.Fatalf("the next Ensure of the Buckety's own topic: want it converged, got %v", err)
	}
	opened, err := New().Open(ctx, "kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := opened.(*Backend)
	defer func() {
		if err := other.Close(); err != nil {
			t.Error(err)
		}
	}()
	if rec, err := other.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || !rec.Same(heldBy(r.Name)) || rec.ResourceID != formatTopicID(second) {
		t.Errorf("the record after the next Ensure: want topic ID %s, got %+v %v", formatTopicID(second), rec, err)
	}
}

// TestTopicCreatedAgainByAnotherReplicaIsNotRefused: replica A creates a
// Buckety's topic again after an out-of-band deletion and stamps its
// record; replica B, whose registry in memory was read before the stamp
// (within the MaxAge of the controller's reads), is handed the Buckety (a
// shard move) and Ensures. B used to refuse the topic on its stale table,
// naming the deleted topic's ID. A refusal is made only on a registry
// caught up: B converges the topic.
func TestTopicCreatedAgainByAnotherReplicaIsNotRefused(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "moved", Parameters: params, MaxAge: time.Hour}
	f.ensure(t, r.Name, params)
	writeHeld(t, f.backend, r.Name)
	b := f.openAnother(t)
	if _, err := b.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	f.deleteOutOfBand(t, r.Name)
	if res := f.ensure(t, r.Name, params); !res.Created {
		t.Fatalf("Ensure of a topic deleted out of band: want it created again, got %+v", res)
	}
	// B's pass: the controller's owner read with the sweep's age, then
	// Ensure.
	if _, err := b.ReadOwner(ctx, drivers.Resource{Name: r.Name, MaxAge: time.Hour}); err != nil {
		t.Fatal(err)
	}
	f.setOutOfBand(t, r.Name, kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")})
	if _, err := b.Ensure(ctx, r); err != nil {
		t.Fatalf("Ensure on a replica whose registry in memory predates the topic's record: want the topic converged, got %v", err)
	}
	if got := f.configsOf(t, r.Name)["retention.ms"]; got != "604800000" {
		t.Errorf("want the topic converged (retention.ms 604800000), got %q", got)
	}
}

// TestStaleObservationDoesNotRefuseTheTopic: replica B observed a
// Buckety's topic; it is deleted out of band and created again by replica
// A, which records it, and B's registry shows that record. B's Ensure
// (with the MaxAge the controller passes) used to check its observation of
// the deleted topic against the record first, and refuse the topic,
// naming the deleted topic's ID as the current one. An observation that
// fails the check is read again: B finds the topic the record names.
func TestStaleObservationDoesNotRefuseTheTopic(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "observed", Parameters: params}
	f.ensure(t, r.Name, params)
	writeHeld(t, f.backend, r.Name)
	b := f.openAnother(t)
	if _, err := b.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Ensure(ctx, r); err != nil { // B observes the first topic
		t.Fatal(err)
	}
	f.deleteOutOfBand(t, r.Name)
	if res := f.ensure(t, r.Name, params); !res.Created {
		t.Fatalf("Ensure of a topic deleted out of band: want it created again, got %+v", res)
	}
	if _, err := b.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil { // fresh: the new ID
		t.Fatal(err)
	}
	aged := r
	aged.MaxAge = time.Hour
	if _, err := b.Ensure(ctx, aged); err != nil {
		t.Errorf("Ensure on a replica whose observation predates the topic created again: want no error, got %v", err)
	}
}

// TestHandoverKeepsTheRecordedTopicID: replica A1 created a Buckety's
// topic (it remembers that topic's ID); replica A2 creates it again after
// an out-of-band deletion and records the new ID; the shard returns to
// A1, whose handover writes the record the controller composes without an
// ID. WriteOwner used to fill in the ID A1 remembered, the deleted
// topic's, over the one the stored record carries: every later Ensure
// refused the Buckety's topic. The stored record's ID is kept.
func TestHandoverKeepsTheRecordedTopicID(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "handed", Parameters: params}
	f.ensure(t, r.Name, params)
	writeHeld(t, f.backend, r.Name)
	a2 := f.openAnother(t)
	f.deleteOutOfBand(t, r.Name)
	if _, err := a2.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	if res, err := a2.Ensure(ctx, r); err != nil || !res.Created {
		t.Fatalf("Ensure on A2 of a topic deleted out of band: want it created again, got %+v %v", res, err)
	}
	writeHeld(t, a2, r.Name)
	second := f.topicIDOf(t, r.Name)
	// Back on A1: the handover reads the record fresh, then writes it
	// handed over.
	if _, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	handed := heldBy(r.Name)
	handed.State, handed.To = drivers.OwnerHandedOver, "west"
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: r.Name}, handed); err != nil {
		t.Fatal(err)
	}
	if rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || !rec.Same(handed) || rec.ResourceID != formatTopicID(second) {
		t.Errorf("the record handed over: want topic ID %s, got %+v %v", formatTopicID(second), rec, err)
	}
}

// TestCreateDoesNotStampAnotherInstallationsRecord: installation west
// retained a topic, its record naming the topic's ID; the topic is deleted
// out of band, and a Buckety of this installation creates the name again
// (the controller's adoption rules let it create over a retained record).
// Ensure used to stamp the new topic's ID into west's record, and would
// have cleared its ID before the create: it writes only this
// installation's records. West's record is left as it is (the
// controller's own record replaces it), and that write names the new
// topic.
func TestCreateDoesNotStampAnotherInstallationsRecord(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "retained", Parameters: params}
	// West's replica creates the topic and records it retained.
	west := f.openAnother(t)
	if res, err := west.Ensure(ctx, r); err != nil || !res.Created {
		t.Fatalf("west's Ensure: want the topic created, got %+v %v", res, err)
	}
	retained := &drivers.OwnerRecord{Installation: "west", Namespace: "team", Name: r.Name, UID: "uid-west", State: drivers.OwnerRetained}
	if err := west.WriteOwner(ctx, drivers.Resource{Name: r.Name, JustCreated: true}, retained); err != nil {
		t.Fatal(err)
	}
	first := f.topicIDOf(t, r.Name)
	f.deleteOutOfBand(t, r.Name)
	// This installation's pass: a fresh read of the record, the create.
	if rec, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || rec.ResourceID != formatTopicID(first) {
		t.Fatalf("west's record: want topic ID %s, got %+v %v", formatTopicID(first), rec, err)
	}
	if res := f.ensure(t, r.Name, params); !res.Created {
		t.Fatalf("Ensure of a name another installation retained, its topic deleted: want it created, got %+v", res)
	}
	second := f.topicIDOf(t, r.Name)
	if rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || !rec.Same(retained) || rec.ResourceID != formatTopicID(first) {
		t.Errorf("west's record after this installation's create: want it as it was (topic ID %s), got %+v %v", formatTopicID(first), rec, err)
	}
	writeHeld(t, f.backend, r.Name)
	if rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || !rec.Same(heldBy(r.Name)) || rec.ResourceID != formatTopicID(second) {
		t.Errorf("this installation's record written after the create: want topic ID %s, got %+v %v", formatTopicID(second), rec, err)
	}
}

// TestNoCreateWhenTheRecordsIDCannotBeCleared: a Buckety's topic deleted
// out of band is created again only once its record no longer names the
// deleted topic (the write-ahead that
// TestOwnTopicCreatedAgainSurvivesALostCreateReply relies on). When that
// write fails (here its answer is lost), the Ensure fails and creates
// nothing: a topic created then could be refused as a stranger's for good.
func TestNoCreateWhenTheRecordsIDCannotBeCleared(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 2 * time.Second}}
	loser := &replyLoser{key: kmsg.Produce, all: true}
	be, opts := losingBackend(t, cfg, loser)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	r := drivers.Resource{Name: "unclear", Parameters: map[string]string{"partitions": "1"}}
	if _, err := be.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	writeHeld(t, be, r.Name)
	res, err := adm.DeleteTopics(ctx, r.Name)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	// The create below is made only once the deletion shows.
	for ok := true; ok; ok, _ = topicExists(t, cl, r.Name) {
	}
	loser.armed.Store(true)
	_, err = be.Ensure(ctx, r)
	loser.armed.Store(false)
	if err == nil || loser.lost.Load() == 0 {
		t.Fatalf("Ensure whose clearing of the record's topic ID fails: want an error, got %v (%d answers lost)", err, loser.lost.Load())
	}
	if ok, id := topicExists(t, cl, r.Name); ok {
		t.Errorf("want nothing created when the record's topic ID could not be cleared, got topic %s of ID %s", r.Name, formatTopicID(id))
	}
}

// anID is a topic ID no topic of the broker has: the ID of a topic
// deleted before the test, as its owner record names it.
var anID = formatTopicID(topicID{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})

// TestOwnRetainedTopicCreatedAgainAfterARestartSurvivesALostCreateReply:
// installation a retained a topic (its record names the topic's ID) that
// was deleted out of band since; after a restart (nothing written by
// WriteOwner in this process), a Buckety adopting it creates it again,
// and the create's answer is lost. The record counted as this
// installation's only when held or given to WriteOwner in this process,
// so its ID was not cleared before the create, and every later Ensure
// refused the Buckety's own new topic. The backend is told its
// installation: the record is cleared, and the next Ensure, on a fresh
// backend (another restart), converges the topic.
func TestOwnRetainedTopicCreatedAgainAfterARestartSurvivesALostCreateReply(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	ctx := context.Background()
	r := drivers.Resource{Name: "retained-again", Parameters: map[string]string{"partitions": "1"}}
	// The process before the restart wrote the record.
	before := openTold(t, cfg, "a")
	retained := &drivers.OwnerRecord{Installation: "a", Namespace: "team", Name: r.Name, UID: "uid-a", State: drivers.OwnerRetained, ResourceID: anID}
	if err := before.WriteOwner(ctx, drivers.Resource{Name: r.Name}, retained); err != nil {
		t.Fatal(err)
	}
	loser := &replyLoser{key: kmsg.CreateTopics}
	be, opts := losingBackend(t, cfg, loser)
	be.SetInstallation("a", nil)
	if _, err := be.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	loser.armed.Store(true)
	if _, err := be.Ensure(ctx, r); err == nil || loser.lost.Load() != 1 {
		t.Fatalf("Ensure whose create answer is lost: want an error and one answer lost, got %v (%d lost)", err, loser.lost.Load())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ok, id := topicExists(t, cl, r.Name)
	if !ok {
		t.Fatalf("want the topic created by the Ensure whose answer was lost, got none")
	}
	after := openTold(t, cfg, "a")
	if _, err := after.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := after.Ensure(ctx, r); err != nil {
		t.Fatalf("Ensure after a restart of the Buckety's own topic created again: want it converged, got %v", err)
	}
	if rec, err := openTold(t, cfg, "a").ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || rec == nil || rec.ResourceID != formatTopicID(id) {
		t.Errorf("the record after the next Ensure: want topic ID %s, got %v %v", formatTopicID(id), rec, err)
	}
}

// openTold opens a backend of its own on cfg, told its installation, as
// the controller's backends.Set does.
func openTold(t *testing.T, cfg *Config, installation string, former ...string) *Backend {
	t.Helper()
	opened, err := New().Open(context.Background(), "kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	be := opened.(*Backend)
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	be.SetInstallation(installation, former)
	return be
}

// TestAnotherInstallationsHeldRecordIsNotWritten: the registry holds
// installation b's held record of a name, naming a topic deleted since,
// and installation a's backend Ensures the name (its controller's owner
// check read an older table). A held record counted as the backend's own
// by that alone: a cleared b's ID before the create and stamped its own
// new topic into b's record. Only records of a's names are written.
func TestAnotherInstallationsHeldRecordIsNotWritten(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	ctx := context.Background()
	r := drivers.Resource{Name: "held-by-b", Parameters: map[string]string{"partitions": "1"}}
	held := &drivers.OwnerRecord{Installation: "b", Namespace: "team", Name: r.Name, UID: "uid-b", State: drivers.OwnerHeld, ResourceID: anID}
	if err := openTold(t, cfg, "b").WriteOwner(ctx, drivers.Resource{Name: r.Name}, held); err != nil {
		t.Fatal(err)
	}
	a := openTold(t, cfg, "a", "a-before")
	if _, err := a.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	if res, err := a.Ensure(ctx, r); err != nil || !res.Created {
		t.Fatalf("Ensure: want the topic created, got %+v %v", res, err)
	}
	rec, err := openTold(t, cfg, "b").ReadOwner(ctx, drivers.Resource{Name: r.Name})
	if err != nil || rec == nil {
		t.Fatalf("b's record after a's Ensure: want it, got %v %v", rec, err)
	}
	if *rec != *held {
		t.Errorf("b's record after a's Ensure: want it as it was (%v, topic ID %s), got %v, topic ID %q", held, held.ResourceID, rec, rec.ResourceID)
	}
}

// TestRefusedCreateGivesTheRecordItsIDBack: a Buckety's topic deleted out
// of band is created again, and the broker refuses the create (here a
// replication factor the one broker cannot give). The record's ID,
// cleared before the create, stayed cleared while the create kept being
// refused, so a topic anyone made under the name meanwhile was trusted as
// the Buckety's. Nothing was created: the record names its ID again.
func TestRefusedCreateGivesTheRecordItsIDBack(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	ctx := context.Background()
	r := drivers.Resource{Name: "refused-again", Parameters: map[string]string{"replicationFactor": "7"}}
	be := openTold(t, cfg, "east")
	rec := heldBy(r.Name)
	rec.ResourceID = anID
	if err := be.WriteOwner(ctx, drivers.Resource{Name: r.Name}, rec); err != nil {
		t.Fatal(err)
	}
	_, err := be.Ensure(ctx, r)
	if nc := (*drivers.NotCreatedError)(nil); !errors.As(err, &nc) {
		t.Fatalf("Ensure asking a replication factor of 7 of one broker: want a NotCreatedError, got %v", err)
	}
	got, err := openTold(t, cfg, "east").ReadOwner(ctx, drivers.Resource{Name: r.Name})
	if err != nil || got == nil {
		t.Fatalf("the record after a refused create: want it, got %v %v", got, err)
	}
	if got.ResourceID != anID {
		t.Errorf("the record after a refused create: want topic ID %s, got %q", anID, got.ResourceID)
	}
}

// TestFailedBackFillDoesNotFailEnsure: a record written before topic IDs
// were kept (every record, right after an upgrade) is back-filled by
// Ensure; when that write fails, Ensure used to fail, and converging
// every Buckety depended on registry writes. The topic is the one a
// record without an ID trusts: Ensure goes on and reports the failure
// among its changes.
func TestFailedBackFillDoesNotFailEnsure(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 2 * time.Second}}
	ctx := context.Background()
	r := drivers.Resource{Name: "legacy", Parameters: map[string]string{"partitions": "1"}}
	old := openTold(t, cfg, "east")
	if err := old.WriteOwner(ctx, drivers.Resource{Name: r.Name}, heldBy(r.Name)); err != nil {
		t.Fatal(err)
	}
	loser := &replyLoser{key: kmsg.Produce, all: true}
	be, opts := losingBackend(t, cfg, loser)
	be.SetInstallation("east", nil)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, r.Name); err != nil {
		t.Fatal(err)
	}
	if rec, err := be.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || rec == nil || rec.ResourceID != "" {
		t.Fatalf("the record before the upgrade: want one without a topic ID, got %+v %v", rec, err)
	}
	loser.armed.Store(true)
	res, err := be.Ensure(ctx, r)
	loser.armed.Store(false)
	if err != nil || loser.lost.Load() == 0 {
		t.Fatalf("Ensure whose back-fill of the record fails: want the topic converged, got %v (%d answers lost)", err, loser.lost.Load())
	}
	if !slices.ContainsFunc(res.Changes, func(c string) bool { return strings.Contains(c, "not yet given the topic's ID") }) {
		t.Errorf("want the failed back-fill among the changes, got %q", res.Changes)
	}
}

// TestLateCreateAnswerRecordsTheTopicCreated: this installation's record
// of a name names a deleted topic's ID (written by another of its
// processes after this one read the registry, so not cleared before the
// create), and this backend creates the topic again; the controller,
// which saw the create's answer too late, writes its record without
// JustCreated. WriteOwner filled in the stored record's ID, the deleted
// topic's: the Buckety's own topic was refused from then on. The topic
// under the name is the one this backend created: its ID is written.
func TestLateCreateAnswerRecordsTheTopicCreated(t *testing.T) {
	broker := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: broker.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	ctx := context.Background()
	r := drivers.Resource{Name: "late", Parameters: map[string]string{"partitions": "1"}}
	be := openTold(t, cfg, "a")
	if _, err := be.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	stale := &drivers.OwnerRecord{Installation: "a", Namespace: "team", Name: r.Name, UID: "uid-a", State: drivers.OwnerHeld, ResourceID: anID}
	if err := openTold(t, cfg, "a").WriteOwner(ctx, drivers.Resource{Name: r.Name}, stale); err != nil {
		t.Fatal(err)
	}
	if res, err := be.Ensure(ctx, r); err != nil || !res.Created {
		t.Fatalf("Ensure: want the topic created, got %+v %v", res, err)
	}
	if _, err := be.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	held := *stale
	held.ResourceID = ""
	if err := be.WriteOwner(ctx, drivers.Resource{Name: r.Name}, &held); err != nil {
		t.Fatal(err)
	}
	after := openTold(t, cfg, "a")
	if _, err := after.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	if _, err := after.Ensure(ctx, r); err != nil {
		t.Errorf("Ensure after a restart: want the topic this installation created converged, got %v", err)
	}
}
