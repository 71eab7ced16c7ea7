package kadm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// heldBy is the record the controller composes for a Buckety it holds: no
// topic ID (drivers.OwnerRecord.ResourceID is the driver's).
func heldBy(name string) *drivers.OwnerRecord {
	return &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: name, UID: "uid-" + name, State: drivers.OwnerHeld}
}

// writeHeld writes, through be, the record the controller writes for the
// Buckety whose topic be just created.
func writeHeld(t *testing.T, be *Backend, topic string) {
	t.Helper()
	if err := be.WriteOwner(context.Background(), drivers.Resource{Name: topic, JustCreated: true}, heldBy(topic)); err != nil {
		t.Fatal(err)
	}
}

// topicIDOf reads topic's ID with the fixture's independent client.
func (f *fixture) topicIDOf(t *testing.T, topic string) topicID {
	t.Helper()
	ok, id := topicExists(t, f.kgo, topic)
	if !ok || id == (topicID{}) {
		t.Fatalf("topic %s: want it with a topic ID, got exists=%v ID %x", topic, ok, id)
	}
	return id
}

// configsOf reads topic's dynamic configs with the fixture's independent
// client (not the backend's describe, which records what it sees).
func (f *fixture) configsOf(t *testing.T, topic string) map[string]string {
	t.Helper()
	rcs, err := f.admin.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == 1 { // DYNAMIC_TOPIC_CONFIG
			out[c.Key] = c.MaybeValue()
		}
	}
	return out
}

// replaceOutOfBand deletes topic and creates one of the same name with the
// fixture's independent client, as an administrator and then a
// producer's auto-create would, and writes a record to it: a topic, and
// data, buckety never held. It returns the new topic's ID.
func (f *fixture) replaceOutOfBand(t *testing.T, topic string) topicID {
	t.Helper()
	ctx := context.Background()
	f.deleteOutOfBand(t, topic)
	created, err := f.admin.CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil || created.Err != nil {
		t.Fatalf("create %s out of band: %v %v", topic, err, created.Err)
	}
	if err := f.kgo.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("theirs")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return created.ID
}

// wantReplaced checks that err is the refusal of topic for op, typed as
// one the same request gets again, naming both IDs.
func wantReplaced(t *testing.T, what string, err error, topic, op string, recorded, current topicID) {
	t.Helper()
	var re *TopicReplacedError
	if !errors.As(err, &re) || !drivers.IsRefused(err) || !drivers.IsReplaced(err) {
		t.Errorf("%s of a topic created again out of band: want a *drivers.RefusedError wrapping a *TopicReplacedError, which the controller takes for a replaced resource (drivers.IsReplaced), got %T %v", what, err, err)
		return
	}
	if re.Topic != topic || re.Op != op || re.Recorded != formatTopicID(recorded) || re.Current != formatTopicID(current) {
		t.Errorf("%s: want the refusal of %s (%s) naming recorded ID %s and current ID %s, got %+v", what, topic, op, formatTopicID(recorded), formatTopicID(current), re)
	}
	msg := err.Error()
	wants := []string{topic, formatTopicID(recorded), formatTopicID(current)}
	if op != opDelete {
		// The message reaches the Buckety's tenant (its status), who
		// cannot write to the registry: the operator's step is theirs
		// to ask for.
		wants = append(wants, "ask the cluster's operator to remove the topic's owner record")
	}
	for _, want := range wants {
		if !strings.Contains(msg, want) {
			t.Errorf("%s: want the message to name %q, got %q", what, want, msg)
		}
	}
}

// TestTopicCreatedAgainOutOfBandIsLeftAlone: a Buckety's topic, held under
// its owner record, is deleted out of band and a topic of the same name
// created and written to by someone else. Ensure used to converge that
// topic (write its configs), Drain to delete its records and Delete to
// delete it, as the name was all the backend knew. The record names the
// topic's ID: each refuses the stranger's topic, with an error naming both
// IDs, and leaves its configs and records as they are. So does a backend
// opened afresh (a restarted controller), which remembers nothing of the
// topic but the registry.
func TestTopicCreatedAgainOutOfBandIsLeftAlone(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "orders", Parameters: params}
	if res := f.ensure(t, r.Name, params); !res.Created {
		t.Fatalf("want topic %s created, got %+v", r.Name, res)
	}
	ours := f.topicIDOf(t, r.Name)
	// The controller's record after the create: composed without an ID,
	// stored with the created topic's.
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: r.Name, JustCreated: true}, heldBy("orders")); err != nil {
		t.Fatal(err)
	}
	if rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || rec == nil || rec.ResourceID != formatTopicID(ours) {
		t.Fatalf("the record of the topic Ensure created: want topic ID %s, got %+v %v", formatTopicID(ours), rec, err)
	}

	theirs := f.replaceOutOfBand(t, r.Name)
	for _, be := range []struct {
		name string
		b    *Backend
	}{{"the same backend", f.backend}, {"a backend opened afresh", f.openAnother(t)}} {
		// The controller reads the record before each (fresh).
		if rec, err := be.b.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || !rec.Same(heldBy("orders")) {
			t.Fatalf("%s: the record: want %v, got %v %v", be.name, heldBy("orders"), rec, err)
		}
		_, err := be.b.Ensure(ctx, r)
		wantReplaced(t, be.name+": Ensure", err, r.Name, opConverge, ours, theirs)
		// An observation of the stranger's topic (the refused Ensure's
		// read) answers no differently.
		withAge := r
		withAge.MaxAge = time.Hour
		f.counter.Reset()
		_, err = be.b.Ensure(ctx, withAge)
		wantReplaced(t, be.name+": Ensure from what it saw", err, r.Name, opConverge, ours, theirs)
		if be.b == f.backend {
			// The controller retries a refused pass: each costs nothing.
			if ops := f.counter.Ops(); len(ops) != 0 {
				t.Errorf("%s: a refused Ensure from what it saw: want no request, got %v", be.name, ops)
			}
		}
		_, err = be.b.Drain(ctx, r, drivers.DrainLimits{})
		wantReplaced(t, be.name+": Drain", err, r.Name, opDrain, ours, theirs)
		err = be.b.Delete(ctx, r)
		wantReplaced(t, be.name+": Delete", err, r.Name, opDelete, ours, theirs)

		if dyn := f.configsOf(t, r.Name); len(dyn) != 0 {
			t.Errorf("%s: the stranger's topic: want its configs untouched (none set), got %v", be.name, dyn)
		}
		start, end := f.offsets(t, r.Name)
		if start[0] != 0 || end[0] != 1 {
			t.Errorf("%s: the stranger's topic: want its record kept (offsets 0 to 1), got %v to %v", be.name, start, end)
		}
		if ok, id := topicExists(t, f.kgo, r.Name); !ok || id != theirs {
			t.Errorf("%s: the stranger's topic: want it kept (ID %x), got exists=%v ID %x", be.name, theirs, ok, id)
		}
	}
}

// TestLegacyOwnerRecordIsBackFilled: a record written by a release that
// kept no topic IDs is trusted as before, and given the ID of the topic
// Ensure finds, once: the passes after it write nothing to the registry.
// A topic created again out of band after that is refused.
func TestLegacyOwnerRecordIsBackFilled(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "legacy", Parameters: params}
	// The topic and its record as an earlier release left them: the
	// record's JSON has no resourceID.
	if _, err := f.openAnother(t).Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	ours := f.topicIDOf(t, r.Name)
	// The registry, as that release created it.
	if _, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	legacy, err := json.Marshal(map[string]any{"installation": "east", "namespace": "team", "name": "legacy", "uid": "uid-legacy", "state": "Held"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.kgo.ProduceSync(ctx, &kgo.Record{Topic: DefaultOwnerRegistryTopic, Key: []byte(r.Name), Value: legacy}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rec, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: r.Name})
	if err != nil || !rec.Same(heldBy("legacy")) || rec.ResourceID != "" {
		t.Fatalf("the legacy record: want %v without a topic ID, got %+v %v", heldBy("legacy"), rec, err)
	}
	f.counter.Reset()
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		t.Fatalf("Ensure under a legacy record: want the topic trusted as before, got %v", err)
	}
	if got := f.counter.Ops()["Produce"]; got != 1 {
		t.Errorf("the back-fill: want one Produce, got %d (%v)", got, f.counter.Ops())
	}
	rec, err = f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: r.Name})
	if err != nil || !rec.Same(heldBy("legacy")) || rec.ResourceID != formatTopicID(ours) {
		t.Fatalf("the legacy record after Ensure: want it back-filled with topic ID %s, got %+v %v", formatTopicID(ours), rec, err)
	}
	f.counter.Reset()
	for range 3 {
		if _, err := f.backend.Ensure(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.counter.Ops()["Produce"]; got != 0 {
		t.Errorf("the passes after the back-fill: want no Produce, got %d (%v)", got, f.counter.Ops())
	}

	theirs := f.replaceOutOfBand(t, r.Name)
	restarted := f.openAnother(t)
	// The controller reads the record before Ensure.
	if _, err := restarted.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil {
		t.Fatal(err)
	}
	_, err = restarted.Ensure(ctx, r)
	wantReplaced(t, "Ensure after the back-fill", err, r.Name, opConverge, ours, theirs)
	if dyn := f.configsOf(t, r.Name); len(dyn) != 0 {
		t.Errorf("the stranger's topic: want its configs untouched, got %v", dyn)
	}
}

// TestTopicEnsureCreatesAgainCarriesItsID: a topic deleted out of band,
// and not created again by anyone, is created again by Ensure as before,
// and its record names the new topic from then on, before the
// controller's own write: a backend opened afresh converges and deletes
// it.
func TestTopicEnsureCreatesAgainCarriesItsID(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "reborn", Parameters: params}
	f.ensure(t, r.Name, params)
	first := f.topicIDOf(t, r.Name)
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: r.Name, JustCreated: true}, heldBy("reborn")); err != nil {
		t.Fatal(err)
	}
	res, err := f.admin.DeleteTopics(ctx, r.Name)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if res := f.ensure(t, r.Name, params); !res.Created {
		t.Fatalf("Ensure of a topic deleted out of band: want it created again, got %+v", res)
	}
	second := f.topicIDOf(t, r.Name)
	if second == first {
		t.Fatalf("want a new topic ID for the topic created again, got the old one %x", first)
	}
	// Stamped by Ensure itself: the controller's write may never come
	// (a controller stopped right after the create).
	rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: r.Name})
	if err != nil || !rec.Same(heldBy("reborn")) || rec.ResourceID != formatTopicID(second) {
		t.Fatalf("the record after Ensure created the topic again: want topic ID %s (the old one was %s), got %+v %v", formatTopicID(second), formatTopicID(first), rec, err)
	}
	// The controller's write after the create keeps it.
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: r.Name, JustCreated: true}, heldBy("reborn")); err != nil {
		t.Fatal(err)
	}
	fresh := f.openAnother(t)
	// The controller reads the record before Ensure and Delete.
	if rec, err := fresh.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || rec.ResourceID != formatTopicID(second) {
		t.Fatalf("the record after the controller's write: want topic ID %s, got %+v %v", formatTopicID(second), rec, err)
	}
	f.setOutOfBand(t, r.Name, kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")})
	if _, err := fresh.Ensure(ctx, r); err != nil {
		t.Fatalf("Ensure of the topic created again, by a backend opened afresh: %v", err)
	}
	if got := f.configsOf(t, r.Name)["retention.ms"]; got != "604800000" {
		t.Errorf("want the topic created again converged (retention.ms 604800000), got %q", got)
	}
	if err := fresh.Delete(ctx, r); err != nil {
		t.Fatalf("Delete of the topic created again, by a backend opened afresh: %v", err)
	}
	if ok, _ := topicExists(t, f.kgo, r.Name); ok {
		t.Error("want the topic created again deleted")
	}
}

// TestOwnerRecordWithTopicIDIsNotWrittenAgain: the controller composes its
// record without a topic ID and compares it with the one it reads, which
// carries one (drivers.OwnerRecord.Same), writing only when they differ.
// Pass after pass, that writes nothing to the registry: no loop of record
// writes because the wanted record lacks the ID the stored one has.
func TestOwnerRecordWithTopicIDIsNotWrittenAgain(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "steady", Parameters: params}
	want := heldBy("steady")
	// A pass as the controller makes it (checkOwner, Ensure, keepOwner).
	pass := func(maxAge time.Duration) {
		t.Helper()
		read := drivers.Resource{Name: r.Name, MaxAge: maxAge}
		if _, err := f.backend.ReadOwner(ctx, read); err != nil {
			t.Fatal(err)
		}
		ensure := r
		ensure.MaxAge = maxAge
		res, err := f.backend.Ensure(ctx, ensure)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := f.backend.ReadOwner(ctx, read)
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Same(want) {
			w := drivers.Resource{Name: r.Name, JustCreated: res.Created}
			if err := f.backend.WriteOwner(ctx, w, want); err != nil {
				t.Fatal(err)
			}
		}
	}
	pass(0)
	rec, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: r.Name})
	if err != nil || rec == nil || rec.ResourceID != formatTopicID(f.topicIDOf(t, r.Name)) {
		t.Fatalf("the record after the create: want it with the topic's ID, got %+v %v", rec, err)
	}
	f.counter.Reset()
	for _, maxAge := range []time.Duration{0, 0, time.Hour, time.Hour, 0} {
		pass(maxAge)
	}
	if got := f.counter.Ops()["Produce"]; got != 0 {
		t.Errorf("five passes over a topic whose record is in place: want no Produce to the registry, got %d (%v)", got, f.counter.Ops())
	}
}

// TestTopicIDsWithoutBrokerIDs: a broker too old for topic IDs (Kafka
// 2.7: Metadata and CreateTopics without them) has records without IDs,
// and a topic created again under a held record is converged as before:
// nothing tells it from the one the record was written for.
func TestTopicIDsWithoutBrokerIDs(t *testing.T) {
	f := newLostDeleteFixture(t, kgo.MaxVersions(kversion.V2_7_0()))
	ctx := context.Background()
	params := map[string]string{"config.retention.ms": "604800000"}
	r := drivers.Resource{Name: "old-broker", Parameters: params}
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: r.Name, JustCreated: true}, heldBy("old-broker")); err != nil {
		t.Fatal(err)
	}
	if rec, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: r.Name}); err != nil || !rec.Same(heldBy("old-broker")) || rec.ResourceID != "" {
		t.Fatalf("the record on a broker without topic IDs: want %v without an ID, got %+v %v", heldBy("old-broker"), rec, err)
	}
	res, err := f.admin.DeleteTopics(ctx, r.Name)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	f.createTheirs(t, r.Name)
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		t.Fatalf("Ensure on a broker without topic IDs: want the topic converged as before, got %v", err)
	}
	rcs, err := f.admin.DescribeTopicConfigs(ctx, r.Name)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(r.Name, nil)
	if err != nil || rc.Err != nil {
		t.Fatal(err, rc.Err)
	}
	got := ""
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			got = c.MaybeValue()
		}
	}
	if got != "604800000" {
		t.Errorf("want retention.ms converged to 604800000, got %q", got)
	}
}

// TestCreateOnlyDoesNotBindARecord: an Ensure with CreateOnly (an
// adoption's create) that finds the topic there takes it for someone
// else's and writes nothing: a record of the name without an ID (one
// retained by an earlier release) is not given that topic's ID.
func TestCreateOnlyDoesNotBindARecord(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	r := drivers.Resource{Name: "appeared"}
	retained := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "appeared", UID: "uid-old", State: drivers.OwnerRetained}
	if err := f.backend.WriteOwner(ctx, r, retained); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.CreateTopic(ctx, 1, 1, nil, r.Name); err != nil {
		t.Fatal(err)
	}
	for _, maxAge := range []time.Duration{0, time.Hour} {
		create := r
		create.CreateOnly, create.MaxAge = true, maxAge
		if res, err := f.backend.Ensure(ctx, create); err != nil || res.Created {
			t.Fatalf("Ensure with CreateOnly of a topic that exists: want nothing done, got %+v %v", res, err)
		}
	}
	if rec, err := f.openAnother(t).ReadOwner(ctx, r); err != nil || !rec.Same(retained) || rec.ResourceID != "" {
		t.Errorf("the retained record: want it left without an ID, got %+v %v", rec, err)
	}
}
