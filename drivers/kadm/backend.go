package kadm

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/Yolean/buckety-controller/drivers"
)

// Backend is one Kafka cluster, reached through one long-lived admin client.
// Concurrent calls are coalesced into requests for many topics (see
// coalesce.go), which are built in requests.go. What Ensure writes is
// planned in plan.go; what Grant writes is in grant.go.
type Backend struct {
	name string
	cfg  *Config
	kgo  *kgo.Client
	adm  *kadm.Client
	// cluster is the cluster's ID, once read (serviceid.go).
	cluster clusterID

	// stop ends the batchers' requests when the backend is closed.
	stop       context.CancelFunc
	metadata   *batcher[struct{}, topicState]
	configs    *batcher[struct{}, map[string]string]
	offsets    *batcher[int32, topicOffsets]
	creates    *batcher[params, createAnswer]
	probes     *batcher[params, string]
	partitions *batcher[int32, string]
	alters     *batcher[[]kadm.AlterConfig, string]
	deletes    *batcher[topicID, string]
	// Batchers of per-access users and ACLs (credbatch.go).
	scramReads  *batcher[struct{}, kadm.DescribedUserSCRAM]
	scramWrites *batcher[scramOp, struct{}]
	aclReads    *batcher[struct{}, map[acl]bool]
	aclCreates  *batcher[[]acl, struct{}]
	aclDeletes  *batcher[[]acl, struct{}]
	// Batchers of per-access users' client quotas (quotaops.go).
	quotaReads  *batcher[struct{}, map[string]float64]
	quotaWrites *batcher[[]quotaOp, struct{}]
	// observed is what the backend last saw of each topic (observed.go).
	observed *observations
	// issuing caches whether the cluster can scope credentials (credentials.go).
	issuing drivers.IssuingCache
	// purge drops bulk reads from the client's metadata cache (metacache.go).
	purge metaPurge
	// deleted are the deletions this backend sent lately, by name.
	deleted *deletions
	// owners is the owner registry, as far as this backend has read it
	// (owners.go).
	owners *ownerTable
	// ids are the topic IDs this backend last created or checked, by
	// name (topicid.go).
	ids *topicIDs
	// open is the verdict on the brokers' allow.everyone.if.no.acl.found
	// (openacls.go).
	open openVerdict
	// base ends when the backend is closed.
	base context.Context
}

// newBackend wires the batchers; linger and maxBatch bound the latency a
// call can gain and the topics in one request.
func newBackend(name string, cfg *Config, cl *kgo.Client, linger time.Duration, maxBatch int) *Backend {
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(cfg.timeout().Milliseconds()))
	base, stop := context.WithCancel(context.Background())
	b := &Backend{name: name, cfg: cfg, kgo: cl, adm: adm, stop: stop, observed: newObservations(), deleted: newDeletions(), owners: newOwnerTable(), ids: newTopicIDs(), base: base}
	t := cfg.timeout()
	b.metadata = newBatcher(base, true, linger, maxBatch*metadataBatchFactor, t, b.execMetadata)
	b.configs = newBatcher(base, true, linger, maxBatch, t, b.execConfigs)
	b.offsets = newBatcher(base, true, linger, maxBatch, t, b.execOffsets)
	b.creates = newBatcher(base, false, linger, maxBatch, t, b.execCreates)
	b.probes = newBatcher(base, true, linger, maxBatch, t, b.execProbes)
	b.partitions = newBatcher(base, false, linger, maxBatch, t, b.execPartitions)
	b.alters = newBatcher(base, false, linger, maxBatch, t, b.execAlters)
	b.deletes = newBatcher(base, false, linger, maxBatch, t, b.execDeletes)
	b.wireCredentialBatchers(base, linger, maxBatch)
	return b
}

// topicID is a Kafka topic ID (KIP-516): a topic deleted and created
// again under its name has a new one. The zero ID is none (a broker before
// Kafka 2.8).
type topicID = [16]byte

// topicState is what the broker has for a topic.
type topicState struct {
	exists            bool
	partitions        int32
	replicationFactor int16
	// id is the topic's ID as Metadata reads it, or as a CreateTopics
	// answer gives it for the topic Ensure created; zero from a broker too
	// old for IDs (and from an observation of a create answered without).
	id topicID
	// dynamic holds the topic's dynamic (per-topic) configs.
	dynamic map[string]string
}

// describe reads a topic's metadata (always fresh, never kgo's cache) and,
// when withConfigs, its dynamic configs. What it finds is recorded as an
// observation when complete: a missing topic, or an existing one with its
// configs.
func (b *Backend) describe(ctx context.Context, topic string, withConfigs bool) (topicState, error) {
	at := b.observed.now()
	st, err := b.metadata.do(ctx, topic, struct{}{})
	if err != nil {
		return topicState{}, b.ctxErr(err)
	}
	if !st.exists {
		b.observed.put(topic, st, at)
	}
	if !st.exists || !withConfigs {
		return st, nil
	}
	dyn, err := b.configs.do(ctx, topic, struct{}{})
	if err != nil {
		return topicState{}, b.ctxErr(err)
	}
	st.dynamic = dyn
	b.observed.put(topic, st, at)
	return st, nil
}

// ctxErr classifies a call's error when it is the call's own deadline;
// request errors arrive classified (see fail), and a broker's answer about
// one topic is left as it is.
func (b *Backend) ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return b.classify(err)
	}
	return err
}

func (b *Backend) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.timeout())
}

// topicOffsets is what a topic's start and end offsets say about content.
type topicOffsets struct {
	records int64
	// first is the lowest partition holding records, -1 for none.
	first int32
}

// Inspect implements drivers.Backend: a topic holds content when any
// partition's end offset is past its start offset. Anything it cannot read
// counts as content.
//
// Whether the topic exists is asked first with a validate-only
// CreateTopics (probe), not Metadata: Metadata is answered by any broker
// from its own copy, and a broker that restarted a moment ago (a rolling
// restart) may not have the topic yet, so a topic another installation
// owns would look missing and be taken. CreateTopics is answered by the
// controller, which checks the name before anything else. It costs the
// create path nothing: it replaces the Metadata request a missing topic
// cost before; an existing topic then costs Metadata and ListOffsets as
// before.
func (b *Backend) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	name := r.Name
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	at := b.observed.now()
	exists, err := b.probe(ctx, r)
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	if exists == probeMissing {
		b.observed.put(name, topicState{}, at)
		return drivers.Inspection{}, nil
	}
	st, err := b.describe(ctx, name, false)
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	if !st.exists {
		if exists == probeExists {
			err := &drivers.UnavailableError{Backend: b.name, Err: fmt.Errorf("topic %s exists (the controller refused to create it) but the broker asked for its metadata does not know it yet", name)}
			return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
		}
		return drivers.Inspection{}, nil
	}
	off, err := b.offsets.do(ctx, name, st.partitions)
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot read offsets: " + err.Error()}, b.classify(err)
	}
	if off.records > 0 {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: fmt.Sprintf("topic %s holds %d records (partition %d and maybe others)", name, off.records, off.first)}, nil
	}
	return drivers.Inspection{Exists: true, Detail: fmt.Sprintf("topic %s exists and holds no records", name)}, nil
}

// probeResult is what a validate-only create says of a topic.
type probeResult int

const (
	// probeMissing: the controller would create the topic.
	probeMissing probeResult = iota
	// probeExists: the controller answered TOPIC_ALREADY_EXISTS.
	probeExists
	// probeUnknown: the controller refused the create for another reason
	// (the parameters, a create policy): Kafka checks the name first, so
	// the topic is most likely missing, but only Metadata can say; and
	// Ensure's create would be refused for the same reason.
	probeUnknown
)

// probe asks the controller, with a validate-only CreateTopics of the
// topic as Ensure would create it, whether the topic exists. An error is
// one that says nothing about the topic (no answer, a controller moving,
// no permission to create).
func (b *Backend) probe(ctx context.Context, r drivers.Resource) (probeResult, error) {
	msg, err := b.probes.do(ctx, r.Name, parseParams(r.Parameters))
	var ke *kerr.Error
	switch {
	case err == nil:
		return probeMissing, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return probeExists, nil
	case errors.As(err, &ke) && !ke.Retriable && !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.NotController):
		return probeUnknown, nil
	}
	return probeUnknown, b.classify(fmt.Errorf("ask the controller whether topic %s exists (validate-only create): %w %s", r.Name, b.ctxErr(err), msg))
}

// recentWithin is recent bounded by a request timeout of its own.
func (b *Backend) recentWithin(ctx context.Context, r drivers.Resource) (topicState, bool) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	return b.recent(ctx, r)
}

// Ensure implements drivers.Backend. With r.MaxAge it may act on a recent
// observation instead of reading the topic (observed.go). An existing
// topic whose ID is not the one its owner record names is refused, and a
// record without an ID gets the topic's (topicid.go).
func (b *Backend) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	if err := b.refuseRegistry(r.Name); err != nil {
		return drivers.EnsureResult{}, err
	}
	// The wait for a sweep in flight that reads the topic has a request
	// timeout of its own: at start-up every Buckety's first pass runs
	// beside the first sweep, read in chunks, and a pass whose topic is in
	// a late chunk spent its whole deadline waiting, then failed as
	// unreachable on a broker that answered every request in time. A wait
	// cut short reads the topic itself, with a deadline of its own.
	st, seen := b.recentWithin(ctx, r)
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	want := parseParams(r.Parameters)
	w := beforeWrite(r)
	if seen && st.exists {
		// The observation's topic ID is checked first (in memory). One
		// that fails the check is not refused on it: the observation may
		// predate a topic created again under the name (by another
		// replica of this installation, which recorded it), so the
		// topic is read again and checked on that, with the registry
		// caught up (ensureTopicID below). A refusal confirmed so
		// before, of the same topic under the same record, stands
		// without a request: the controller retries a refused pass.
		if _, err := b.checkTopicID(opConverge, r.Name, st.id); err != nil && !r.CreateOnly {
			if b.ids.confirmed(r.Name, err) {
				return drivers.EnsureResult{}, err
			}
			seen = false
		} else {
			bound, err := b.ensureTopicID(ctx, r, st.id, w)
			if err != nil {
				return drivers.EnsureResult{}, err
			}
			if p := planFor(want, st); p.empty() {
				return drivers.EnsureResult{Shortfalls: want.shortfalls(), Changes: bound}, nil
			}
			seen = false // something to write: read it first
		}
	}
	if !seen {
		var err error
		if st, err = b.describe(ctx, r.Name, true); err != nil {
			return drivers.EnsureResult{}, err
		}
	}
	if !st.exists && r.DryRun {
		return drivers.EnsureResult{Shortfalls: want.shortfalls(), Changes: []string{fmt.Sprintf("create topic %s (partitions %s, replication factor %s, %d configs)", r.Name, orBroker(int64(want.partitions)), orBroker(int64(want.replicationFactor)), len(want.configs))}}, nil
	}
	if st.exists && r.CreateOnly {
		// Someone else's, since the adoption check: written to only once
		// its adoption settles.
		return drivers.EnsureResult{Shortfalls: want.shortfalls()}, nil
	}
	if !st.exists {
		if err := w(ctx); err != nil {
			return drivers.EnsureResult{}, err
		}
		// The topic this create makes is the Buckety's own: a Delete of
		// the name after it deletes it, whatever deletion this backend
		// sent for an earlier topic of the name (a Buckety deleted and
		// made again).
		b.deleted.forget(r.Name)
		// A record of this installation naming the topic deleted out of
		// band loses that ID before the create (topicid.go): the topic
		// made is the Buckety's whatever becomes of the answer.
		cleared, err := b.unbindTopicID(ctx, r.Name)
		if err != nil {
			return drivers.EnsureResult{}, err
		}
		at := b.observed.now()
		ans, err := b.creates.do(ctx, r.Name, want)
		msg := ans.msg
		switch {
		case err == nil:
			st := created(want)
			st.id = ans.id
			b.observed.wrote(r.Name, st, at)
			b.ids.created(r.Name, ans.id)
			changes := []string{fmt.Sprintf("created topic %s (partitions %s, replication factor %s, %d configs)", r.Name, orBroker(int64(want.partitions)), orBroker(int64(want.replicationFactor)), len(want.configs))}
			if rec := b.tableRecord(r.Name); rec != nil && ans.id != (topicID{}) && rec.ResourceID != formatTopicID(ans.id) {
				// The name's record names no topic (cleared before the
				// create, or written before IDs were kept): it names
				// this one from now on. The create stands whatever the
				// stamp's outcome: the record without an ID trusts the
				// topic, and the next Ensure stamps it (its back-fill),
				// so a failed stamp is reported with the create.
				if err := b.bindTopicID(ctx, opConverge, r.Name, ans.id); err != nil {
					changes = append(changes, fmt.Sprintf("owner record of topic %s not yet given the topic's ID (the next pass does): %v", r.Name, err))
				}
			}
			return drivers.EnsureResult{Created: true, Shortfalls: want.shortfalls(), Changes: changes}, nil
		case errors.Is(err, kerr.TopicAlreadyExists):
			if r.CreateOnly {
				// Created by someone else since the adoption check.
				return drivers.EnsureResult{Shortfalls: want.shortfalls()}, nil
			}
			// Created by someone else between the describe and this
			// create (or by a retry of this create whose first answer
			// was lost): nothing is written to it, and the next pass
			// reads its owner record before converging it.
			b.observed.forget(r.Name)
			return drivers.EnsureResult{}, fmt.Errorf("topic %s appeared on the backend between its describe and its create: nothing was written to it, and its owner is checked at the next pass", r.Name)
		default:
			// The create's outcome may be unknown (no answer before the
			// deadline: a paused broker may still carry it out), so what
			// was seen before it no longer stands: the next pass reads the
			// topic instead of creating it again.
			b.observed.forget(r.Name)
			cerr := b.createError(fmt.Errorf("create topic %s: %w %s", r.Name, err, msg))
			if nc := (*drivers.NotCreatedError)(nil); cleared != "" && errors.As(cerr, &nc) {
				// Refused: nothing was created, and the record names the
				// deleted topic again (topicid.go).
				if err := b.rebindTopicID(ctx, r.Name, cleared); err != nil {
					return drivers.EnsureResult{}, fmt.Errorf("%w; %v", cerr, err)
				}
			}
			return drivers.EnsureResult{}, cerr
		}
	}
	bound, err := b.ensureTopicID(ctx, r, st.id, w)
	if err != nil {
		return drivers.EnsureResult{}, err
	}
	res, err := b.converge(ctx, r.Name, want, st, r.DryRun, w)
	res.Changes = append(bound, res.Changes...)
	return res, err
}

// ensureTopicID is Ensure's check of the ID of the existing topic it found
// (topicid.go): a refusal when the owner record names another topic, and,
// unless a dry run, the record given the ID where it lacks it, after the
// controller's owner check (beforeWrite): it is a write. With CreateOnly
// an existing topic is someone else's, written nothing, and its ID is
// neither checked nor recorded: a record there (one retained) must not be
// bound to it. A record that could not be given the ID (its catch-up or
// write failed) does not fail Ensure: the topic is the one the record
// without an ID trusts, as before IDs were kept (every record of an older
// release right after an upgrade), and the next pass binds it; the
// failure is returned as a change line (bound), as the create's stamp is.
func (b *Backend) ensureTopicID(ctx context.Context, r drivers.Resource, id topicID, beforeWrite func(context.Context) error) (bound []string, err error) {
	if r.CreateOnly {
		return nil, nil
	}
	stamp, err := b.checkTopicIDFresh(ctx, opConverge, r.Name, id)
	if err != nil || !stamp || r.DryRun {
		return nil, err
	}
	if err := beforeWrite(ctx); err != nil {
		return nil, err
	}
	if err := b.bindTopicID(ctx, opConverge, r.Name, id); err != nil {
		var re *TopicReplacedError
		if errors.As(err, &re) {
			return nil, err
		}
		return []string{fmt.Sprintf("owner record of topic %s not yet given the topic's ID %s (the next pass does): %v", r.Name, formatTopicID(id), err)}, nil
	}
	return nil, nil
}

// grownTo reports whether topic, read afresh, is still the topic of id
// and has at least n partitions.
func (b *Backend) grownTo(ctx context.Context, topic string, id topicID, n int32) bool {
	now, err := b.describe(ctx, topic, false)
	return err == nil && now.exists && now.id == id && now.partitions >= n
}

// beforeWrite returns a function that calls r.BeforeWrite the first time
// it is called, and remembers its answer.
func beforeWrite(r drivers.Resource) func(context.Context) error {
	called := false
	var err error
	return func(ctx context.Context) error {
		if r.BeforeWrite == nil || called {
			return err
		}
		called = true
		err = r.BeforeWrite(ctx)
		return err
	}
}

// converge brings an existing topic to the parameters. Drift it must not
// repair is returned as a *drivers.DriftError after everything repairable
// has been applied. What to write is decided by planFor, which Sweep uses
// too. With dryRun it only compares: every write is skipped, and Changes
// lists the writes it would have made.
func (b *Backend) converge(ctx context.Context, topic string, want params, st topicState, dryRun bool, beforeWrite func(context.Context) error) (drivers.EnsureResult, error) {
	res := drivers.EnsureResult{Shortfalls: want.shortfalls()}
	p := planFor(want, st)
	if !dryRun && (p.growTo > 0 || len(p.alters) > 0) {
		if err := beforeWrite(ctx); err != nil {
			return res, err
		}
	}
	at := b.observed.now()
	grownElsewhere := false
	if p.growTo > 0 && !dryRun {
		msg, err := b.partitions.do(ctx, topic, p.growTo)
		if errors.Is(err, kerr.InvalidPartitions) && b.grownTo(ctx, topic, st.id, p.growTo) {
			// Sent again after a reset connection lost the answer to the
			// grow (kgo resends it), or grown by another pass meanwhile:
			// the broker refuses a count the topic already has. Read
			// again, the topic has it: that grow is done, not refused.
			// Its count may be more than asked (grown out of band too):
			// no observation is recorded, so the next pass reads it and
			// reports any drift.
			err, grownElsewhere = nil, true
		}
		if err != nil {
			b.observed.forget(topic)
			return res, b.classify(fmt.Errorf("grow partitions of %s to %d: %w %s", topic, p.growTo, err, msg))
		}
	}
	res.Changes = p.changes
	if len(p.alters) > 0 && !dryRun {
		if msg, err := b.alters.do(ctx, topic, p.alters); err != nil {
			b.observed.forget(topic)
			return res, b.classify(fmt.Errorf("alter configs of %s: %w %s", topic, err, msg))
		}
	}
	switch {
	case grownElsewhere:
		b.observed.forget(topic)
	case !dryRun && (p.growTo > 0 || len(p.alters) > 0):
		b.observed.wrote(topic, applied(st, p), at)
	}
	if p.drift != nil {
		return res, p.drift
	}
	return res, nil
}

// Delete implements drivers.Backend. It reads the topic's metadata and
// deletes the topic by the ID it read (by name from a broker too old for
// IDs), so that the request deletes only that topic and never one created
// under the name since. A name this backend sent a deletion for lately
// (see deletions) is deleted by that deletion's ID; one that now holds a
// topic of another ID is left alone and the deletion taken as done,
// unless the name's owner record names that topic's ID (the Buckety
// holding the name now).
// Otherwise a topic whose ID is not the one its owner record names is
// refused (topicid.go): it was created under the name by someone else
// since the record's topic was deleted out of band.
func (b *Backend) Delete(ctx context.Context, r drivers.Resource) error {
	name := r.Name
	if err := b.refuseRegistry(name); err != nil {
		return err
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	at := b.observed.now()
	st, err := b.metadata.do(ctx, name, struct{}{})
	if err != nil {
		return b.classify(fmt.Errorf("delete topic %s: read its metadata: %w", name, b.ctxErr(err)))
	}
	id := st.id
	sent, remembered := b.deleted.get(name)
	if remembered && st.exists && st.id != (topicID{}) && st.id != sent {
		// The topic this backend deleted is gone (its answer was lost,
		// or the controller deletes again after a success), and another
		// was created under the name since. One whose owner record
		// names its ID is the record holder's: a Buckety that took the
		// name since (created by another replica, adopted, handed over),
		// whose deletion the controller asks for having read that
		// record, and it is deleted as any other. Any other topic was
		// created by someone else (a producer's auto-create, an
		// administrator): it is not this Buckety's, and neither is its
		// data. Delete reports no more than an error, so it reports done.
		held, err := b.recordNamesTopic(ctx, name, st.id)
		if err != nil {
			return err
		}
		if !held {
			b.observed.forget(name)
			return nil
		}
		remembered = false
	}
	if remembered {
		// A topic missing from a broker's metadata may only be missing
		// from that broker's copy: the deletion sent before is sent
		// again, by its ID, and can delete nothing else.
		id = sent
	} else if st.exists {
		// A topic whose ID is not its owner record's was created under
		// the name since the record's topic was deleted out of band: it
		// is not deleted (topicid.go).
		if _, err := b.checkTopicIDFresh(ctx, opDelete, name, st.id); err != nil {
			return err
		}
	}
	msg, err := b.deletes.do(ctx, name, id)
	if id != (topicID{}) {
		// Whatever the answer, and without one: the request may have
		// deleted the topic, and the name may be taken before the
		// controller's next Delete of it.
		b.deleted.put(name, id)
	}
	if errors.Is(err, kerr.UnknownTopicID) && !remembered {
		// The ID was read just now, and a broker answering from stale
		// metadata, or one that takes DeleteTopics v6 but not deletion
		// by ID, answers UNKNOWN_TOPIC_ID for a topic still there: it
		// is done only if the name no longer holds that topic. Until
		// then the deletion is not remembered: the request deleted
		// nothing, and the next pass's Delete, were it a retry of this
		// one, would take the same answer for done.
		now, rerr := b.metadata.do(ctx, name, struct{}{})
		if rerr != nil {
			b.deleted.forget(name)
			b.observed.forget(name)
			return b.classify(fmt.Errorf("delete topic %s: %w %s; read its metadata again: %w", name, err, msg, b.ctxErr(rerr)))
		}
		if now.exists && now.id == id {
			b.deleted.forget(name)
			b.observed.forget(name)
			return b.classify(fmt.Errorf("delete topic %s: the broker answered %w %s for topic ID %x, and the topic of that ID is still there: the deletion by ID was not applied", name, err, msg, id))
		}
	}
	if err == nil || errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		b.observed.wrote(name, topicState{}, at)
		b.ids.forget(name)
		return nil
	}
	b.observed.forget(name)
	return b.classify(fmt.Errorf("delete topic %s: %w %s", name, err, msg))
}

// Deletions remembered. A DeleteTopics whose answer is lost (the network
// drops it, the request times out) may have deleted the topic all the
// same, and the controller calls Delete again at a later pass; it may call
// it again after a success too (its update that removes the finalizer
// failed). Meanwhile the name is free: a producer's auto-create or an
// administrator may have made a topic of that name and written to it,
// and a Delete that read the name then would delete a topic, and data,
// buckety never held. So the backend remembers, per name, the topic ID
// of the last deletion it sent, and Delete leaves a topic of another ID
// alone. The memory lives in the process, for deletionTTL (the controller
// retries a failed pass within minutes) and at most maxDeletions names,
// the oldest dropped first; a restarted controller does not have it.
const (
	deletionTTL  = time.Hour
	maxDeletions = 4096
)

// deletions are the deletions a backend sent lately: the topic ID of each
// name's last one.
type deletions struct {
	mu     sync.Mutex
	byName map[string]*list.Element
	// order holds the *deletion entries, oldest first.
	order *list.List
	now   func() time.Time
}

type deletion struct {
	name string
	id   topicID
	at   time.Time
}

func newDeletions() *deletions {
	return &deletions{byName: map[string]*list.Element{}, order: list.New(), now: time.Now}
}

// put remembers a deletion of name's topic id, in place of any before it.
func (d *deletions) put(name string, id topicID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if e, ok := d.byName[name]; ok {
		d.order.Remove(e)
	}
	d.byName[name] = d.order.PushBack(&deletion{name: name, id: id, at: now})
	for e := d.order.Front(); e != nil && (d.order.Len() > maxDeletions || now.Sub(e.Value.(*deletion).at) > deletionTTL); e = d.order.Front() {
		d.removeLocked(e)
	}
}

// get returns the topic ID of name's last deletion, unless it has expired.
func (d *deletions) get(name string) (topicID, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.byName[name]
	if !ok {
		return topicID{}, false
	}
	del := e.Value.(*deletion)
	if d.now().Sub(del.at) > deletionTTL {
		d.removeLocked(e)
		return topicID{}, false
	}
	return del.id, true
}

// forget drops name's deletion.
func (d *deletions) forget(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.byName[name]; ok {
		d.removeLocked(e)
	}
}

func (d *deletions) removeLocked(e *list.Element) {
	delete(d.byName, e.Value.(*deletion).name)
	d.order.Remove(e)
}

// refuseRegistry refuses the owner registry's topic as a tenant resource
// (ValidateName refuses it too; this holds for a name admitted before).
func (b *Backend) refuseRegistry(name string) error {
	if name == b.cfg.registryTopic() || name == DefaultOwnerRegistryTopic {
		return fmt.Errorf("kadm: backend %s: %s is buckety's owner registry, not a tenant's topic", b.name, name)
	}
	return nil
}

// Close implements drivers.Backend.
func (b *Backend) Close() error {
	b.stop()
	b.adm.Close()
	return nil
}

// classify wraps errors that mean "could not reach the cluster" in a
// *drivers.UnavailableError and refused credentials or permissions in a
// *drivers.AccessDeniedError; other request errors pass through.
func (b *Backend) classify(err error) error {
	if err == nil || drivers.IsUnavailable(err) || drivers.IsAccessDenied(err) {
		return err
	}
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) {
		return &drivers.AccessDeniedError{Backend: b.name, Err: err}
	}
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &oe), errors.As(err, &ne),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, io.EOF), errors.Is(err, kgo.ErrClientClosed):
		return &drivers.UnavailableError{Backend: b.name, Err: err}
	}
	if ke := (*kerr.Error)(nil); errors.As(err, &ke) && !ke.Retriable {
		// A broker error code Kafka does not retry (INVALID_REQUEST,
		// POLICY_VIOLATION, ...): the same request gets the same answer.
		return &drivers.RefusedError{Err: err}
	}
	return err
}

// createError classifies a failed CreateTopics (sent once): a broker
// error code Kafka does not retry, answered for the topic, or the
// controller's user not authorized to create it, is a
// drivers.NotCreatedError wrapping the classified error; not
// UNKNOWN_SERVER_ERROR, nor a timeout or a code Kafka retries, which do
// not say what the broker did.
func (b *Backend) createError(err error) error {
	denied := errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed)
	err = b.classify(err)
	if denied || (drivers.IsRefused(err) && !errors.Is(err, kerr.UnknownServerError)) {
		return &drivers.NotCreatedError{Err: err}
	}
	return err
}

// orBroker formats a partition count or replication factor for a change
// line; -1 asks for the broker's default.
func orBroker(n int64) string {
	if n < 0 {
		return "broker default"
	}
	return strconv.FormatInt(n, 10)
}
