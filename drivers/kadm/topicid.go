package kadm

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"

	"github.com/Yolean/buckety-controller/drivers"
)

// Topic IDs in owner records. A topic is known by its name, across
// restarts too, and a name is free the moment its topic is deleted: an
// administrator deletes a Buckety's topic out of band, a producer's
// auto-create (or another administrator) makes one of the same name, and
// a backend that knew topics by name alone would converge that topic
// (write its configs), drain it or delete it, with data buckety never
// held. Kafka gives each topic an ID (KIP-516, Kafka 2.8 on) that a topic
// created again under the name does not share, so the owner record
// carries the ID of the topic it was written for
// (drivers.OwnerRecord.ResourceID), and Ensure, Drain and Delete compare
// it with the ID of the topic they find under the name: a topic of
// another ID is refused (TopicReplacedError), and nothing is written to,
// drained from or deleted from it.
//
// The IDs come from what those calls read anyway (Metadata, an
// observation, a CreateTopics answer) and from the registry held in
// memory: the check costs no request. The record gets its ID:
//
//   - from WriteOwner, which fills in the ID of the topic this backend last
//     created or checked under the name (topicIDs), or else keeps the one
//     the record it replaces carries: the controller composes records
//     without IDs, and drivers.OwnerRecord.Same ignores an ID one side
//     lacks, so the controller's steady pass finds its record the same and
//     writes nothing;
//   - from Ensure itself where the controller would not write: a record
//     written before IDs were kept is back-filled, once, with the ID of the
//     topic Ensure finds (the topic today's behaviour trusts), and a topic
//     Ensure creates under a name whose record carries another ID (the
//     topic was deleted out of band) gets its record stamped with the new
//     ID at once, before the controller's own write, so that a controller
//     stopped between the create and its record does not find its own
//     topic refused after a restart. Both read the registry fresh first,
//     and write only the record read with the ID changed.
//
// A topic Ensure created in this process is its own even where the record
// still names an older ID (its record write was lost): it is stamped, not
// refused. After a restart that memory is gone, and such a topic (created,
// then the process stopped before any record named it) is refused like a
// stranger's; the refusal says what a maintainer can do.
//
// A broker before Kafka 2.8 gives no IDs (the zero ID): nothing is
// checked or recorded, as before. A record without an ID, or no record,
// checks nothing either.

// formatTopicID is a topic ID as Kafka's tools print it (kafka-topics
// --describe: base64 URL encoding without padding), "" for the zero ID.
func formatTopicID(id topicID) string {
	if id == (topicID{}) {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// TopicReplacedError is the refusal of a topic whose ID is not the one
// its owner record names: the record's topic was deleted, and this one
// created under its name since by someone else. It is returned wrapped in
// a *drivers.RefusedError: asking again gets the same answer until
// someone acts.
type TopicReplacedError struct {
	// Backend and Topic name the topic.
	Backend, Topic string
	// Op is what was refused: "converge", "drain" or "delete".
	Op string
	// Recorded is the ID the owner record names; Current the topic's.
	Recorded, Current string
	// Registry is the owner registry's topic.
	Registry string
}

func (e *TopicReplacedError) Error() string {
	verb := map[string]string{opConverge: "write to", opDrain: "drain", opDelete: "delete"}[e.Op]
	s := fmt.Sprintf("kadm: backend %s: topic %s is not the topic buckety holds: its owner record names topic ID %s, and the topic now under the name has ID %s "+
		"(the topic was deleted out of band, and someone, a producer's auto-create or an administrator, created one of the same name since); "+
		"buckety does not %s it, nor touch its data. ", e.Backend, e.Topic, e.Recorded, e.Current, verb)
	if e.Op == opDelete {
		return s + "The topic buckety held is gone: to finish the Buckety's deletion and leave this one as it is, set its spec.retentionPolicy to Retain; " +
			"or delete the topic yourself if its data is not wanted"
	}
	return s + fmt.Sprintf("To have buckety create the Buckety's topic again, delete this one if its data is not wanted; to make this topic the Buckety's as it is, "+
		"remove the topic's owner record from the registry %s (produce a record of key %s and a null value, e.g. `echo '%s:' | kcat -P -b <broker> -t %s -K: -Z`)",
		e.Registry, e.Topic, e.Topic, e.Registry)
}

// What a TopicReplacedError refuses.
const (
	opConverge = "converge"
	opDrain    = "drain"
	opDelete   = "delete"
)

// topicIDs is, per topic name, the ID of the topic this backend last
// created or checked under it: what WriteOwner fills into a record the
// controller writes without one. made marks a topic this backend created
// itself.
type topicIDs struct {
	mu sync.Mutex
	m  map[string]knownTopicID
}

type knownTopicID struct {
	id   topicID
	made bool
}

func newTopicIDs() *topicIDs { return &topicIDs{m: map[string]knownTopicID{}} }

// created notes the topic this backend created under name (the zero ID
// when the broker's answer had none: the name's last ID is then unknown).
func (k *topicIDs) created(name string, id topicID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[name] = knownTopicID{id: id, made: true}
}

// checked notes a topic found under name whose record holds it (or that
// no record names); a topic this backend created keeps that mark.
func (k *topicIDs) checked(name string, id topicID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if have, ok := k.m[name]; ok && have.id == id {
		return
	}
	k.m[name] = knownTopicID{id: id}
}

func (k *topicIDs) get(name string) (knownTopicID, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[name]
	return v, ok
}

// forget drops name's topic: deleted by this backend.
func (k *topicIDs) forget(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, name)
}

// tableRecord is the record the registry held in memory has for name:
// nil for none, a tombstone or one that cannot be decoded (ReadOwner
// fails on that, so the controller never gets as far as an Ensure).
func (b *Backend) tableRecord(name string) *drivers.OwnerRecord {
	t := b.owners
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.recs[name]
	if !ok || e.rec == nil || e.err != nil {
		return nil
	}
	rec := *e.rec
	return &rec
}

// checkTopicID compares the ID of the topic found under name with the one
// its owner record (in memory) names, before op: a *drivers.RefusedError
// wrapping a *TopicReplacedError when they differ, unless this backend
// created that topic itself. stamp reports a record that should carry id
// and does not (written before IDs were kept, or before its topic was
// created again by this backend). It sends no request.
func (b *Backend) checkTopicID(op, name string, id topicID) (stamp bool, err error) {
	if id == (topicID{}) {
		return false, nil
	}
	rec := b.tableRecord(name)
	cur := formatTopicID(id)
	switch {
	case rec == nil:
		b.ids.checked(name, id)
		return false, nil
	case rec.ResourceID == cur:
		b.ids.checked(name, id)
		return false, nil
	case rec.ResourceID == "":
		// Written before IDs were kept: the topic is trusted, as it was
		// before, and its ID recorded.
		b.ids.checked(name, id)
		return true, nil
	}
	if k, ok := b.ids.get(name); ok && k.made && k.id == id {
		return true, nil
	}
	return false, &drivers.RefusedError{Err: &TopicReplacedError{Backend: b.name, Topic: name, Op: op, Recorded: rec.ResourceID, Current: cur, Registry: b.cfg.registryTopic()}}
}

// bindTopicID gives name's owner record the ID of the topic Ensure found
// or created, where checkTopicID said it lacks it: the registry is caught
// up first, the check made again on what it holds now, and the record
// read written back with the ID. Only a refusal found then is returned: a
// record that cannot be read or written now is stamped by a later pass,
// and meanwhile the topic is what the record's check before trusted.
func (b *Backend) bindTopicID(ctx context.Context, op, name string, id topicID) error {
	if err := b.catchUp(ctx); err != nil {
		return nil
	}
	stamp, err := b.checkTopicID(op, name, id)
	if err != nil || !stamp {
		return err
	}
	rec := b.tableRecord(name)
	if rec == nil {
		return nil
	}
	rec.ResourceID = formatTopicID(id)
	_ = b.writeRecord(ctx, name, rec, false)
	return nil
}

// recordedTopicID is the ID WriteOwner puts in a record composed without
// one: the topic this backend last created or checked under name; else
// the ID the record it replaces carries (the controller rewrites a
// record it read for the same topic: a state change, a handover).
func (b *Backend) recordedTopicID(name string) string {
	if k, ok := b.ids.get(name); ok {
		return formatTopicID(k.id)
	}
	if rec := b.tableRecord(name); rec != nil {
		return rec.ResourceID
	}
	return ""
}
