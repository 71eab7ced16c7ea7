package kadm

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
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
// memory: the check costs no request on the steady path. A topic that
// fails the check is checked again on fresh data before it is refused:
// the registry is caught up (another replica may have recorded the topic
// since this one's table was read), and a topic seen in an observation is
// read again (it may have been created again since). Only the refusal
// path pays those requests, and only once: the controller's retries of a
// refused pass, from an observation of the same topic under the same
// record, are refused again in memory. The record gets its ID:
//
//   - from WriteOwner (recordedTopicID), which fills in the ID of the
//     topic this backend created in the same pass
//     (drivers.Resource.JustCreated), or created with no record of the
//     name written since (the controller did not see the create's answer
//     in time); else keeps the ID the record it
//     replaces carries where that record is of the same installation
//     (the controller rewrites a record it read: a state change, a
//     handover; another replica may have created the topic again since
//     this one last saw it); else the ID of the topic this backend last
//     created or checked under the name (topicIDs): the controller
//     composes records without IDs, and drivers.OwnerRecord.Same ignores
//     an ID one side lacks, so the controller's steady pass finds its
//     record the same and writes nothing;
//   - from Ensure itself where the controller would not write: a record
//     without an ID (written before IDs were kept, or cleared before a
//     create, below) is back-filled with the ID of the topic Ensure finds
//     (the topic today's behaviour trusts), and a topic Ensure creates is
//     stamped into its record at once. Both read the registry fresh
//     first, and write only the record read with the ID changed.
//
// Before Ensure creates a topic under a name whose record carries an ID
// (the topic was deleted out of band), it clears the ID from the record
// (write-ahead), and creates nothing when that write fails: the create's
// answer may be lost, or the process stop before the stamp, and a record
// still naming the deleted topic would have the Buckety's own topic
// refused for good. A record without an ID trusts the topic found, and
// the back-fill binds whatever the create made. That includes a topic
// someone else created under the name between Ensure's read and its
// create (answered TOPIC_ALREADY_EXISTS, which a retry of a create whose
// answer was lost gets too): the two cannot be told apart, and refusing
// the Buckety's own topic for good is the worse mistake.
//
// Not the deleted topic, though: the record keeps the ID it lost
// (drivers.OwnerRecord.ClearedResourceID), and a topic answered with that
// ID is the deleted one, from a broker whose metadata is behind the
// deletion. It is not bound: after a lost answer, the pass of a restarted
// process, or of another replica the Buckety moved to, would bind the
// record to the deleted topic on such an answer, and the Buckety's own
// topic be refused for good. Only two reads answering that ID make it the
// topic's: it was never gone (a broker that did not know it yet answered
// the name missing, and the create found it there).
//
// When the create is refused (drivers.NotCreatedError: a policy, a
// replication factor the cluster cannot give, authorization, a quota),
// nothing was created, and the record gets its ID back: only a create
// whose outcome is unknown leaves the record without one.
//
// Ensure writes (clears, stamps, back-fills) only records of its own
// installation: the controller tells the backend the installation's name
// and former names (drivers.InstallationAware), and a record naming any
// of them is its own, after a restart too, whatever its state (held,
// retained, handed over), as is one another installation handed over to
// it. A held record of another installation is not: the controller's
// owner check may have read an older record than the one Ensure acts on.
// A backend told no installation (opened outside the controller) counts
// the installations of the records WriteOwner gave it. Another
// installation's retained record, which a Buckety may create over, is left
// as it is: the controller's write that follows the create replaces it,
// with the new topic's ID.
//
// A topic Ensure created in this process is its own even where the record
// still names an older ID (another installation's retained record, left
// as it is): it is not refused. After a restart that memory is gone; the
// controller's record write after the create names the new topic.
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
		"buckety does not %s it, nor touch its data, and revokes the credentials its accesses hold on the name. ", e.Backend, e.Topic, e.Recorded, e.Current, verb)
	if e.Op == opDelete {
		return s + "The topic buckety held is gone: the Buckety's deletion leaves this one as it is (delete it yourself if its data is not wanted)"
	}
	return s + fmt.Sprintf("To have buckety create the Buckety's topic again, delete this one if its data is not wanted; to make this topic the Buckety's as it is, "+
		"ask the cluster's operator to remove the topic's owner record from the registry %s (a record of key %s and a null value, e.g. `echo '%s:' | kcat -P -b <broker> -t %s -K: -Z`)",
		e.Registry, e.Topic, e.Topic, e.Registry)
}

// ResourceReplaced implements drivers.Replaced: the controller reports
// the refusal as ResourceReplaced.
func (e *TopicReplacedError) ResourceReplaced() {}

var _ drivers.Replaced = (*TopicReplacedError)(nil)

// What a TopicReplacedError refuses.
const (
	opConverge = "converge"
	opDrain    = "drain"
	opDelete   = "delete"
)

// topicIDs is, per topic name, the ID of the topic this backend last
// created or checked under it: what WriteOwner fills into a record the
// controller writes without one. made marks a topic this backend created
// itself. It also holds what tells which records are this installation's
// (ownRecord): the installation's names, once told (SetInstallation), and
// until then the installations whose records WriteOwner was given.
type topicIDs struct {
	mu sync.Mutex
	m  map[string]knownTopicID
	// told: SetInstallation was called; names are then the installation's
	// current and former names.
	told  bool
	names map[string]bool
	// installations are those of the records WriteOwner was given,
	// consulted only while the backend was told no installation.
	installations map[string]bool
	// refused is, per name, the refusal last confirmed on fresh data
	// (checkTopicIDFresh): the record's ID and the topic's.
	refused map[string][2]string
	// gone is, per name, the IDs of topics this backend found deleted
	// under it before it created the name's topic again (unbindTopicID),
	// the newest last, at most goneKept: a broker whose metadata is
	// behind may still answer one of them, and that is not a topic
	// someone else made. The record keeps the newest too
	// (drivers.OwnerRecord.ClearedResourceID), for a restarted process
	// and another replica.
	gone map[string][]string
	// answered is, per name, a topic ID found deleted (in gone, or the
	// record's ClearedResourceID) that two reads answered since
	// (checkTopicIDFresh): the topic was never gone, and is bound. It
	// holds only for the record it was judged under (its place in the
	// registry): a record written since, by this backend or another
	// replica (which may have found that very topic deleted, cleared it,
	// and lost its create's answer), is judged afresh.
	answered map[string]answeredID
}

// answeredID is an entry of topicIDs.answered: the ID, and the place in
// the registry of the record it was judged under.
type answeredID struct {
	id  string
	rec recordAt
}

// recordAt is a record's place in the registry: its partition and offset
// (recordPlace).
type recordAt struct {
	partition int32
	offset    int64
}

// goneKept is how many deleted topics' IDs topicIDs.gone keeps a name.
const goneKept = 4

type knownTopicID struct {
	id   topicID
	made bool
}

func newTopicIDs() *topicIDs {
	return &topicIDs{m: map[string]knownTopicID{}, names: map[string]bool{}, installations: map[string]bool{}, refused: map[string][2]string{}, gone: map[string][]string{}, answered: map[string]answeredID{}}
}

// deletedBefore notes id (formatted) as a topic found deleted under name.
func (k *topicIDs) deletedBefore(name, id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	ids := slices.DeleteFunc(k.gone[name], func(s string) bool { return s == id })
	if len(ids) >= goneKept {
		ids = ids[len(ids)-goneKept+1:]
	}
	k.gone[name] = append(ids, id)
	if k.answered[name].id == id {
		delete(k.answered, name)
	}
}

// notDeleted forgets id (formatted) as a topic found deleted under name:
// two reads answered it since (checkTopicIDFresh). It is the topic's
// even where the record at at keeps it as its cleared ID.
func (k *topicIDs) notDeleted(name, id string, at recordAt) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gone[name] = slices.DeleteFunc(k.gone[name], func(s string) bool { return s == id })
	if len(k.gone[name]) == 0 {
		delete(k.gone, name)
	}
	k.answered[name] = answeredID{id: id, rec: at}
}

// wasDeleted reports whether id (formatted) is a topic found deleted
// under name: by this backend (deletedBefore), or by the one that cleared
// it from name's record (cleared, the ClearedResourceID of the record at
// at), unless two reads answered it since under that record
// (notDeleted).
func (k *topicIDs) wasDeleted(name, id, cleared string, at recordAt) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return id != "" && (slices.Contains(k.gone[name], id) || id == cleared && k.answered[name] != answeredID{id: id, rec: at})
}

var _ drivers.InstallationAware = (*Backend)(nil)

// SetInstallation implements drivers.InstallationAware: records naming
// current or a former name are this installation's (ownRecord).
func (b *Backend) SetInstallation(current string, former []string) {
	k := b.ids
	k.mu.Lock()
	defer k.mu.Unlock()
	k.told = true
	k.names = map[string]bool{current: true}
	for _, n := range former {
		k.names[n] = true
	}
}

// created notes the topic this backend created under name (the zero ID
// when the broker's answer had none: the name's last ID is then unknown).
func (k *topicIDs) created(name string, id topicID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[name] = knownTopicID{id: id, made: true}
	delete(k.refused, name)
}

// checked notes a topic found under name whose record holds it (or that
// no record names); a topic this backend created keeps that mark.
func (k *topicIDs) checked(name string, id topicID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.refused, name)
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
	delete(k.refused, name)
}

// confirmRefusal notes err, when it refuses a topic (TopicReplacedError),
// as a refusal made on fresh data.
func (k *topicIDs) confirmRefusal(name string, err error) {
	var re *TopicReplacedError
	if !errors.As(err, &re) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refused[name] = [2]string{re.Recorded, re.Current}
}

// confirmed reports whether err, a refusal checkTopicID made in memory,
// is the one last confirmed on fresh data for name: the same record's ID
// and the same topic's. A refused pass the controller retries is then
// refused again without a request, until the record or the topic seen
// under the name changes (the sweep reads both within its interval).
func (k *topicIDs) confirmed(name string, err error) bool {
	var re *TopicReplacedError
	if !errors.As(err, &re) {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.refused[name]
	return ok && v == [2]string{re.Recorded, re.Current}
}

// wrote notes the installation of a record WriteOwner was given.
func (k *topicIDs) wrote(installation string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.installations[installation] = true
}

// ownRecord reports whether Ensure may write rec, a record of its topic:
// one of this installation, under its name or a former one, or one
// another installation handed over to it (see the package's notes on
// topic IDs above). A held record is not by that alone: the table the
// controller's owner check read may be older than the one Ensure acts on,
// whose record may be another installation's since. A backend told no
// installation (one opened outside the controller) goes by the records
// WriteOwner was given.
func (b *Backend) ownRecord(rec *drivers.OwnerRecord) bool {
	k := b.ids
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.told {
		return k.installations[rec.Installation]
	}
	return k.names[rec.Installation] || rec.State == drivers.OwnerHandedOver && k.names[rec.To]
}

// tableRecord is the record the registry held in memory has for name:
// nil for none, a tombstone or one that cannot be decoded (ReadOwner
// fails on that, so the controller never gets as far as an Ensure).
func (b *Backend) tableRecord(name string) *drivers.OwnerRecord {
	rec, _ := b.tableRecordAt(name)
	return rec
}

// tableRecordAt is tableRecord with the record's place in the registry.
func (b *Backend) tableRecordAt(name string) (*drivers.OwnerRecord, recordAt) {
	t := b.owners
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.recs[name]
	if !ok || e.rec == nil || e.err != nil {
		return nil, recordAt{}
	}
	rec := *e.rec
	return &rec, recordAt{partition: e.partition, offset: e.offset}
}

// checkTopicID compares the ID of the topic found under name with the one
// its owner record (in memory) names, before op: a *drivers.RefusedError
// wrapping a *TopicReplacedError when they differ, unless this backend
// created that topic itself. stamp reports a record that should carry id
// and does not (written before IDs were kept, cleared before a create, or
// naming a topic this backend has created again since). It sends no
// request: a refusal it returns may come of a table behind the registry,
// and stands only once checkTopicIDFresh confirms it.
func (b *Backend) checkTopicID(op, name string, id topicID) (stamp bool, err error) {
	if id == (topicID{}) {
		return false, nil
	}
	rec, at := b.tableRecordAt(name)
	cur := formatTopicID(id)
	switch {
	case rec == nil:
		b.ids.checked(name, id)
		return false, nil
	case rec.ResourceID != cur && b.ids.wasDeleted(name, cur, rec.ClearedResourceID, at):
		// A topic found deleted before the name's topic was created
		// again (by this backend, or by the one that cleared the
		// record, as its cleared ID says: this process may have been
		// restarted since, or the Buckety moved to it from another
		// replica): a broker whose metadata is behind the deletion
		// answered it. It is neither refused nor bound to a record
		// cleared before that create (whose answer may have been
		// lost): checkTopicIDFresh reads it again.
		return false, &staleTopicIDError{backend: b.name, topic: name, id: cur, recorded: rec.ResourceID, at: at}
	case rec.ResourceID == cur:
		b.ids.checked(name, id)
		return false, nil
	case rec.ResourceID == "":
		// Written before IDs were kept, or cleared before this
		// installation created the topic again (and not the topic
		// found deleted then, above): the topic is trusted, as it was
		// before, and its ID recorded.
		b.ids.checked(name, id)
		return true, nil
	}
	if k, ok := b.ids.get(name); ok && k.made && k.id == id {
		return true, nil
	}
	return false, &drivers.RefusedError{Err: &TopicReplacedError{Backend: b.name, Topic: name, Op: op, Recorded: rec.ResourceID, Current: cur, Registry: b.cfg.registryTopic()}}
}

// checkTopicIDFresh is checkTopicID of a topic read just now (id), whose
// refusal stands only on a registry caught up first: the table in memory
// may be up to a read's MaxAge old, and miss the record another replica
// wrote for the topic it created again. The catch-up is made only when
// the table's record refuses the topic, so the steady path sends nothing;
// an error of the catch-up is returned as it is (the check is not made).
func (b *Backend) checkTopicIDFresh(ctx context.Context, op, name string, id topicID) (stamp bool, err error) {
	if stamp, err = b.checkTopicID(op, name, id); err == nil {
		return stamp, nil
	}
	if err := b.catchUp(ctx); err != nil {
		return false, fmt.Errorf("kadm: backend %s: topic %s: read its owner record again before refusing the topic (its ID is not the one the record read before names): %w", b.name, name, err)
	}
	stamp, err = b.checkTopicID(op, name, id)
	var stale *staleTopicIDError
	switch {
	case drivers.IsReplaced(err):
		// The topic's metadata is read again before the refusal
		// stands: a refusal revokes the credentials of the Buckety's
		// accesses, and one broker's metadata may be behind (a topic
		// deleted and created again under the name by another replica
		// of this installation, whose record names the new one). A
		// Metadata request goes to any broker, so the second read may
		// reach another. A topic that is gone or of another ID now is
		// not refused on this read: the next pass reads it again.
		if err := b.readsAgain(ctx, name, id, "before refusing the topic (its ID is not the one its owner record names)"); err != nil {
			return false, err
		}
	case errors.As(err, &stale) && stale.recorded == "":
		// The record lost its ID before a create whose answer this
		// backend did not get, and the topic found deleted then is
		// answered: a broker behind the deletion, or the topic was
		// never gone (a broker that did not know it yet answered the
		// name missing, and the create found it there). A second read
		// that answers it again is taken for the topic's: it is
		// bound, as any topic a record without an ID finds, whether
		// this backend or the record (its cleared ID) knows it for the
		// deleted one. One that answers another is bound on a later
		// pass.
		if err := b.readsAgain(ctx, name, id, "before recording it (its ID is the one of the topic found deleted before)"); err != nil {
			return false, err
		}
		// The verdict holds for the record judged stale, not for one
		// another replica wrote meanwhile (that replica may have found
		// this very topic deleted since): such a record is judged
		// afresh on this check.
		b.ids.notDeleted(name, stale.id, stale.at)
		stamp, err = b.checkTopicID(op, name, id)
	}
	b.ids.confirmRefusal(name, err)
	return stamp, err
}

// readsAgain reads name's metadata again, and returns nil when it shows
// the topic of id again, else an error to read it again on a later pass
// (why says what the read is for).
func (b *Backend) readsAgain(ctx context.Context, name string, id topicID, why string) error {
	now, err := b.metadata.do(ctx, name, struct{}{})
	switch {
	case err != nil:
		return b.classify(fmt.Errorf("kadm: backend %s: topic %s: read its metadata again %s: %w", b.name, name, why, b.ctxErr(err)))
	case !now.exists || now.id != id:
		return fmt.Errorf("kadm: backend %s: topic %s: two reads of its metadata disagree (topic ID %s, then %s): a broker's metadata is behind, or the topic changed just now; read again on the next pass", b.name, name, formatTopicID(id), formatTopicID(now.id))
	}
	return nil
}

// staleTopicIDError is checkTopicID's answer for a topic ID found deleted
// under the name before the name's topic was created again (by this
// backend, topicIDs.gone, or by the one that cleared it from the record,
// its ClearedResourceID): not a refusal, and retried.
type staleTopicIDError struct {
	backend, topic, id, recorded string
	// at is the place of the record judged (what a never-gone verdict
	// holds for).
	at recordAt
}

func (e *staleTopicIDError) Error() string {
	rec := "no topic ID"
	if e.recorded != "" {
		rec = "topic ID " + e.recorded
	}
	return fmt.Sprintf("kadm: backend %s: topic %s: the broker answered topic ID %s, of the topic found deleted before buckety created the name's topic again (its owner record names %s): that broker's metadata is behind; read again on the next pass", e.backend, e.topic, e.id, rec)
}

// bindTopicID gives name's owner record the ID of the topic Ensure found
// or created, where checkTopicID said it lacks it: the registry is caught
// up first, the check made again on what it holds now, and the record
// read written back with the ID, if it is this installation's
// (ownRecord). It returns a refusal found then, and the error of a
// catch-up or write that failed: the record is then stamped by a later
// pass, and meanwhile the topic is what the check before trusted.
func (b *Backend) bindTopicID(ctx context.Context, op, name string, id topicID) error {
	if err := b.catchUp(ctx); err != nil {
		return fmt.Errorf("kadm: backend %s: topic %s: read its owner record before giving it the topic's ID %s: %w", b.name, name, formatTopicID(id), err)
	}
	stamp, err := b.checkTopicID(op, name, id)
	if err != nil || !stamp {
		return err
	}
	rec := b.tableRecord(name)
	if rec == nil || !b.ownRecord(rec) {
		return nil
	}
	rec.ResourceID, rec.ClearedResourceID = formatTopicID(id), ""
	if err := b.writeRecord(ctx, name, rec, false, false); err != nil {
		return fmt.Errorf("kadm: backend %s: topic %s: give its owner record the topic's ID %s: %w", b.name, name, rec.ResourceID, err)
	}
	return nil
}

// unbindTopicID is the write-ahead before Ensure creates name: a record of
// this installation naming a topic ID (the topic deleted out of band) is
// written again without it, read fresh first, so that the topic the
// create makes is trusted whatever becomes of the create's answer and of
// the stamp after it (a lost reply, a stopped process, a failed write).
// The back-fill of a later Ensure binds the record to the topic found
// then. Ensure creates nothing when this fails. It returns the ID cleared
// ("" when none was), which rebindTopicID writes back when the create is
// refused. A record the table in memory shows without an ID costs no
// request: the controller read the record in its owner check of this
// pass. (One another replica gave an ID after that read is not cleared;
// only a create whose answer is lost in that window leaves a record
// naming the old topic.)
//
// The record keeps the ID cleared (ClearedResourceID): a broker behind
// the deletion may answer it after the create, to this process or to one
// that has none of its memory (restarted, or another replica the Buckety
// moved to), and checkTopicID binds no record to it.
func (b *Backend) unbindTopicID(ctx context.Context, name string) (string, error) {
	if rec := b.tableRecord(name); rec == nil || rec.ResourceID == "" || !b.ownRecord(rec) {
		if rec != nil && rec.ResourceID == "" && rec.ClearedResourceID != "" && b.ownRecord(rec) {
			// Cleared before an earlier create, and the name read
			// missing again: the topic of that ID is gone, whatever two
			// reads answered since.
			b.ids.deletedBefore(name, rec.ClearedResourceID)
		}
		return "", nil
	}
	if err := b.catchUp(ctx); err != nil {
		return "", fmt.Errorf("kadm: backend %s: topic %s: read its owner record before creating the topic again (its record names the topic deleted out of band): %w; nothing was created", b.name, name, err)
	}
	rec := b.tableRecord(name)
	if rec == nil || rec.ResourceID == "" || !b.ownRecord(rec) {
		return "", nil
	}
	was := rec.ResourceID
	// Found deleted (Ensure read the name missing): a broker that
	// still answers it after the create is behind, whatever becomes of
	// the write.
	b.ids.deletedBefore(name, was)
	rec.ResourceID, rec.ClearedResourceID = "", was
	if err := b.writeRecord(ctx, name, rec, false, false); err != nil {
		return "", fmt.Errorf("kadm: backend %s: topic %s: clear the topic ID %s (the topic deleted out of band) from its owner record before creating the topic again: %w; nothing was created", b.name, name, was, err)
	}
	return was, nil
}

// rebindTopicID undoes unbindTopicID's write after a create the broker
// refused (drivers.NotCreatedError: nothing was created): name's record
// names the deleted topic's ID was again, and keeps no cleared ID, so
// that a topic someone else creates under the name while the create
// keeps being refused (a policy, a replication factor the cluster cannot
// give, a quota) is not trusted as the Buckety's. Only a create whose
// outcome is unknown (a lost answer, a timeout) leaves the record without
// an ID. The record is read fresh first and written only while it is this
// installation's and still names no topic.
func (b *Backend) rebindTopicID(ctx context.Context, name, was string) error {
	if err := b.catchUp(ctx); err != nil {
		return fmt.Errorf("kadm: backend %s: topic %s: read its owner record to give it back the topic ID %s (the create was refused): %w", b.name, name, was, err)
	}
	rec := b.tableRecord(name)
	if rec == nil || rec.ResourceID != "" || !b.ownRecord(rec) {
		return nil
	}
	rec.ResourceID, rec.ClearedResourceID = was, ""
	if err := b.writeRecord(ctx, name, rec, false, false); err != nil {
		return fmt.Errorf("kadm: backend %s: topic %s: give its owner record back the topic ID %s (the create was refused): %w", b.name, name, was, err)
	}
	return nil
}

// recordedTopicID is the ID WriteOwner puts in rec, a record composed
// without one, for name: the topic this backend created in the same pass
// (justCreated); else the ID the record it replaces carries, where that
// record is of rec's installation or this one's (ownRecord: a former name,
// a handover to it) (the controller rewrites a record it
// read: a state change, a handover; another replica may have created the
// topic again and recorded it since this backend last saw it), unless
// this backend created a topic under name of another ID and that topic is
// the one under the name now (madeIsCurrent); else the topic this backend
// last created or checked under name, unless that is a topic found
// deleted (wasDeleted: the record was cleared before a create since).
// Where it returns no ID, cleared is the one the record it replaces keeps
// (drivers.OwnerRecord.ClearedResourceID), carried over on the same terms
// as its ID.
func (b *Backend) recordedTopicID(ctx context.Context, name string, rec *drivers.OwnerRecord, justCreated bool) (id, cleared string, err error) {
	k, known := b.ids.get(name)
	if justCreated && known && k.made {
		return formatTopicID(k.id), "", nil
	}
	was, at := b.tableRecordAt(name)
	carried := was != nil && (was.Installation == rec.Installation || b.ownRecord(was))
	if carried && was.ResourceID != "" {
		if !known || !k.made || was.ResourceID == formatTopicID(k.id) {
			return was.ResourceID, "", nil
		}
		current, err := b.madeIsCurrent(ctx, name, was.ResourceID, k.id)
		if err != nil || !current {
			return was.ResourceID, "", err
		}
		return formatTopicID(k.id), "", nil
	}
	if carried {
		cleared = was.ClearedResourceID
	}
	if id := formatTopicID(k.id); known && id != "" && !b.ids.wasDeleted(name, id, cleared, at) {
		return id, "", nil
	}
	return "", cleared, nil
}

// madeIsCurrent reports whether the topic under name now is id, the one
// this backend created: read when a record of this installation names
// another ID (recorded). Either may be the topic under the name. The
// controller passes JustCreated only where it saw the create's answer in time; one
// that came late leaves the record naming the topic the create replaced,
// which is then stored for good, and refused, if the process stops
// before a later pass writes it. Or another replica created the topic
// again since (after an out-of-band deletion of this backend's) and
// recorded it, and this backend's is gone. The topic's metadata tells
// them apart; only this conflict pays the request.
func (b *Backend) madeIsCurrent(ctx context.Context, name, recorded string, id topicID) (bool, error) {
	if id == (topicID{}) {
		return false, nil
	}
	st, err := b.metadata.do(ctx, name, struct{}{})
	if err != nil {
		return false, b.classify(fmt.Errorf("kadm: backend %s: topic %s: read its metadata to tell which topic its owner record names (the record names topic ID %s, and this backend created one of ID %s): %w", b.name, name, recorded, formatTopicID(id), b.ctxErr(err)))
	}
	return st.exists && st.id == id, nil
}

// recordNamesTopic reports whether name's owner record, read from a
// registry caught up just now, is this installation's and names the topic
// of ID id: the topic is the record holder's, a Buckety of this
// installation. A record without an ID (written before IDs were kept)
// names none, and another installation's is not this one's to act on
// (its Buckety may have taken the name between the controller's read of
// the record and this one): a topic created since a deletion of this
// backend is then taken for someone else's, as before IDs.
func (b *Backend) recordNamesTopic(ctx context.Context, name string, id topicID) (bool, error) {
	if err := b.catchUp(ctx); err != nil {
		return false, fmt.Errorf("kadm: backend %s: topic %s: read its owner record before deleting a topic created since this backend's deletion of the name: %w", b.name, name, err)
	}
	rec := b.tableRecord(name)
	return rec != nil && b.ownRecord(rec) && rec.ResourceID == formatTopicID(id), nil
}
