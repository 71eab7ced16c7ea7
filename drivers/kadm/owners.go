package kadm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// Owner records (drivers.OwnerRecorder). Kafka refuses topic configs it
// does not know, so a topic cannot carry its owner record; the backend
// keeps the records in the owner registry instead, a compacted topic
// (ownerRegistry.topic, default __buckety-owners) keyed by topic name,
// each value the JSON of a drivers.OwnerRecord, a removed record a
// tombstone (nil value). Every installation pointed at the cluster reads
// and writes the same topic, so each sees the others' records.
//
// The backend holds the registry in memory (ownerTable) and catches it up
// with the log: a ListOffsets of the registry's end offsets, then a Fetch
// from where it last stopped, only when the registry grew. The first
// catch-up loads the whole topic. A read that must be fresh (MaxAge 0)
// waits for a catch-up that starts after it was asked for, and every read
// waiting at once shares one; a read with MaxAge is answered from memory
// when the last catch-up is younger, without a request. A write is one
// record produced with acks=all through the admin client's producer, whose
// linger batches the writes of concurrent creates into one Produce
// request.
//
// Only the backend's own user reaches the registry: its name starts with
// "__", which ValidateName refuses to every Buckety (and refuses the
// configured name by itself too), an access's only topic ACLs are LITERAL
// on its own topic (acls.go), and Grant, Ensure and Delete refuse the
// registry outright, in case a name got past an older webhook.
//
// A registry that Metadata reports missing is created (one partition,
// cleanup.policy=compact): a successful create is the controller's word
// that it did not exist, while a broker with stale metadata could report a
// registry missing that holds records, and an empty table read off such a
// report would let another installation's topics look unowned.
//
// A registry that exists may not be compacted (created by hand, or
// altered later): its configs are read and judged, and the probe reports
// one whose policy lets the brokers delete records (registryconfigs.go).

// reloadAfter bounds how long the table goes without a full load.
// Compaction drops a tombstone delete.retention.ms (a day by default)
// after it was written; a backend that caught up less often than that
// could miss one, and keep a removed record forever. Loading the whole
// registry again now and then bounds that.
const reloadAfter = time.Hour

// ownerEntry is a record in the table, and where in the log it was read.
type ownerEntry struct {
	rec *drivers.OwnerRecord
	// err: the record could not be decoded; reads of its topic fail.
	err       error
	partition int32
	offset    int64
}

// registryPartition is what the backend knows of one registry partition.
type registryPartition struct {
	// next is the offset the next Fetch starts at.
	next int64
	// own are offsets at or past next of records this backend wrote: the
	// table has them, so next moves past them while they are contiguous,
	// and a fresh read after this backend's own writes fetches nothing.
	own map[int64]bool
}

// wrote notes this backend's record at offset.
func (p *registryPartition) wrote(offset int64) {
	if offset < p.next {
		return
	}
	if p.own == nil {
		p.own = map[int64]bool{}
	}
	p.own[offset] = true
	p.advance()
}

// advance moves next past this backend's own records.
func (p *registryPartition) advance() {
	for p.own[p.next] {
		delete(p.own, p.next)
		p.next++
	}
	for o := range p.own {
		if o < p.next {
			delete(p.own, o)
		}
	}
}

// ownerTable is the in-memory registry.
type ownerTable struct {
	mu   sync.Mutex
	recs map[string]ownerEntry
	// known: the registry's metadata is known (it exists).
	known   bool
	topicID [16]byte
	parts   map[int32]*registryPartition
	// caughtUp is when the last complete catch-up asked for the end
	// offsets; loadedAt when the last full load did.
	caughtUp, loadedAt time.Time
	// full asks the next catch-up to load the whole registry again.
	full bool
	// partial is what a full load that failed read, for the next to
	// resume from (fetchRegistry).
	partial *fullLoad
	// epoch counts the times the registry was found deleted and created
	// again (drivers.RegistryEpochs).
	epoch uint64
	// unsound is the verdict on the registry's configs: why they let the
	// brokers delete its records, or why they could not be read, zero when
	// they keep them or before they were read; configsAt is when they were
	// last asked for, configsID the registry's topic ID then
	// (registryconfigs.go).
	unsound   drivers.Warning
	configsAt time.Time
	configsID [16]byte

	// Coalescing of catch-ups: next is the round that callers join; it
	// starts when the running one ends.
	next    *catchUpRound
	running bool
}

// fullLoad is a load of the whole registry: a table of its own, so that
// records it no longer finds (compacted into a tombstone) do not survive,
// and where in the log it stopped.
type fullLoad struct {
	topicID [16]byte
	// started is when the load's first try began: the table it makes is
	// as old as the records it read first.
	started time.Time
	recs    map[string]ownerEntry
	// read holds the topics of every record the load read.
	read map[string]struct{}
	next map[int32]int64
}

func newFullLoad(topicID [16]byte, started time.Time) *fullLoad {
	return &fullLoad{topicID: topicID, started: started, recs: map[string]ownerEntry{}, read: map[string]struct{}{}, next: map[int32]int64{}}
}

// add takes records read, in log order, into the load's table.
func (l *fullLoad) add(batch []fetched) {
	for _, f := range batch {
		l.read[f.topic] = struct{}{}
		applyEntry(l.recs, f.topic, f.entry)
	}
}

// dropBelow forgets what the load read of partition p before offset
// start: a resumed load whose next fetch finds the log starting past
// what an earlier try read (DeleteRecords, a retention on a registry
// created by hand) must not keep records the log no longer has, and a
// record the table had there then counts as lost (catchUp moves the
// epoch).
func (l *fullLoad) dropBelow(p int32, start int64) {
	for name, e := range l.recs {
		if e.partition == p && e.offset < start {
			delete(l.recs, name)
			delete(l.read, name)
		}
	}
}

// catchUpRound is one catch-up, shared by every caller that joined it
// before it started.
type catchUpRound struct {
	done chan struct{}
	err  error
}

func newOwnerTable() *ownerTable {
	return &ownerTable{recs: map[string]ownerEntry{}, parts: map[int32]*registryPartition{}, full: true}
}

var _ drivers.OwnerRecorder = (*Backend)(nil)

// OwnerRecords implements drivers.OwnerRecorder: a Kafka cluster can
// always hold the registry.
func (b *Backend) OwnerRecords(context.Context) (bool, string, error) { return true, "", nil }

var _ drivers.OwnerRegistry = (*Backend)(nil)

// OwnerRecordsOutliveResources implements drivers.OwnerRegistry: the
// records are in the registry topic, not with the topics they name.
func (b *Backend) OwnerRecordsOutliveResources() bool { return true }

var _ drivers.RegistryEpochs = (*Backend)(nil)

// CatchUpRegistry implements drivers.RegistryEpochs.
func (b *Backend) CatchUpRegistry(ctx context.Context, maxAge time.Duration) error {
	t := b.owners
	t.mu.Lock()
	fresh := !t.caughtUp.IsZero() && b.observed.now().Sub(t.caughtUp) <= maxAge
	t.mu.Unlock()
	if fresh {
		return nil
	}
	return b.catchUp(ctx)
}

// RegistryEpoch implements drivers.RegistryEpochs.
func (b *Backend) RegistryEpoch() uint64 {
	t := b.owners
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.epoch
}

// ReadOwner implements drivers.OwnerRecorder.
func (b *Backend) ReadOwner(ctx context.Context, r drivers.Resource) (*drivers.OwnerRecord, error) {
	t := b.owners
	if r.MaxAge > 0 {
		t.mu.Lock()
		fresh := !t.caughtUp.IsZero() && b.observed.now().Sub(t.caughtUp) <= r.MaxAge
		e, ok := t.recs[r.Name]
		t.mu.Unlock()
		if fresh {
			return entryRecord(r.Name, e, ok)
		}
	}
	if err := b.catchUp(ctx); err != nil {
		return nil, err
	}
	t.mu.Lock()
	e, ok := t.recs[r.Name]
	t.mu.Unlock()
	return entryRecord(r.Name, e, ok)
}

// entryRecord is the record ReadOwner answers for e: without its
// ClearedResourceID, which is this driver's alone (topicid.go). The
// controller compares the records it reads with the ones it composes,
// which never carry it, and copies them into records it writes.
func entryRecord(name string, e ownerEntry, ok bool) (*drivers.OwnerRecord, error) {
	switch {
	case !ok:
		return nil, nil
	case e.err != nil:
		return nil, fmt.Errorf("owner record of %s (registry partition %d offset %d): %w", name, e.partition, e.offset, e.err)
	case e.rec == nil:
		return nil, nil
	}
	rec := *e.rec
	rec.ClearedResourceID = ""
	return &rec, nil
}

// WriteOwner implements drivers.OwnerRecorder: one record produced to the
// registry, created first when this backend has not seen it exist. A
// record without a topic ID gets the one recordedTopicID knows
// (topicid.go), or, where it knows none, the cleared ID the record it
// replaces keeps. The controller writes only its own installation's
// records: the installation of rec is noted as this backend's own, for
// ownRecord while the backend was told no installation.
func (b *Backend) WriteOwner(ctx context.Context, r drivers.Resource, rec *drivers.OwnerRecord) error {
	if r.Name == "" {
		return fmt.Errorf("kadm: backend %s: write owner record: no topic", b.name)
	}
	if rec != nil {
		b.ids.wrote(rec.Installation)
	}
	return b.writeRecord(ctx, r.Name, rec, true, r.JustCreated)
}

// writeRecord produces rec as name's record; with fill, a record without
// a topic ID gets the one recordedTopicID knows (justCreated: the topic
// was created in the controller's pass), once the table is loaded, or
// else the cleared ID it carries over. A record that names a topic keeps
// no cleared ID: the one it had was of a topic deleted before the one it
// names now.
func (b *Backend) writeRecord(ctx context.Context, name string, rec *drivers.OwnerRecord, fill, justCreated bool) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	t := b.owners
	t.mu.Lock()
	known := t.known
	t.mu.Unlock()
	if !known {
		// Creates the registry when it is missing, and loads it.
		if err := b.catchUp(ctx); err != nil {
			return err
		}
	}
	var value []byte
	if rec != nil {
		if fill && rec.ResourceID == "" {
			id, cleared, err := b.recordedTopicID(ctx, name, rec, justCreated)
			if err != nil {
				return err
			}
			c := *rec
			c.ResourceID, c.ClearedResourceID = id, cleared
			rec = &c
		}
		if rec.ResourceID != "" && rec.ClearedResourceID != "" {
			c := *rec
			c.ClearedResourceID = ""
			rec = &c
		}
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		value = v
	}
	topic := b.cfg.registryTopic()
	// The produce runs on a goroutine of its own, which the caller leaves
	// at its timeout. An idempotent producer does not give a record up
	// once the request carrying it was sent (the broker may have written
	// it; failing it would break the sequence), whatever its context says:
	// against a broker that stops answering with its connection open (a
	// frozen process, a path that drops packets), ProduceSync waits for as
	// long, and the reconcile worker with it. The write itself goes on:
	// the registry's later records queue behind it, so none overtakes it,
	// and the table takes it in when it lands. A caller that timed out
	// does not know whether it landed, as after a lost answer, and writes
	// it again.
	done := make(chan error, 1)
	go func() {
		res, err := b.kgo.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(name), Value: value}).First()
		if err != nil {
			// The registry may have moved or gone: the next catch-up reads
			// its metadata again (and creates it when it is missing).
			b.forgetRegistry()
			if errors.Is(err, kerr.UnknownTopicID) {
				b.forgetRegistryTopicID(topic)
			}
			done <- err
			return
		}
		t.mu.Lock()
		t.apply(name, ownerEntry{rec: rec, partition: res.Partition, offset: res.Offset})
		if p := t.parts[res.Partition]; p != nil {
			p.wrote(res.Offset)
		}
		t.mu.Unlock()
		done <- nil
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return b.classify(fmt.Errorf("write owner record of %s to %s: %w", name, topic, err))
	}
	return nil
}

// apply puts what the log says at e's offset about topic into the table,
// unless the table already holds a later record of the topic's partition.
// A nil record removes the topic's.
func (t *ownerTable) apply(topic string, e ownerEntry) {
	applyEntry(t.recs, topic, e)
}

// applyEntry is apply on the table recs.
func applyEntry(recs map[string]ownerEntry, topic string, e ownerEntry) {
	if have, ok := recs[topic]; ok && have.partition == e.partition && have.offset > e.offset {
		return
	}
	// A tombstone is kept as an entry with no record, so that an older
	// record read later is not taken for the latest.
	recs[topic] = e
}

// catchUp waits for a catch-up of the table that starts after it was
// called; concurrent callers share one.
func (b *Backend) catchUp(ctx context.Context) error {
	t := b.owners
	t.mu.Lock()
	if t.next == nil {
		t.next = &catchUpRound{done: make(chan struct{})}
	}
	r := t.next
	if !t.running {
		b.startCatchUpLocked()
	}
	t.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return b.classify(fmt.Errorf("read owner registry: %w", ctx.Err()))
	}
}

// startCatchUpLocked runs the round callers joined, and the next after it.
//
// A round is bounded per request, not as a whole: each request it makes
// has a timeout of its own (b.ctx). A full load is several requests in a
// row (Metadata, DescribeConfigs, ListOffsets, a Fetch per 16 MiB of each
// partition, and the client's own metadata requests), and the next round
// is a full load again until one completes: under one timeout for them
// all, a broker answering each request in a third of it, or a registry
// too large to fetch within one, would fail every load, and every read of
// the registry, for as long as it lasted, while each request alone was
// answered in time. A broker that stops answering ends a round at the
// timeout of the request it holds. The callers wait with
// contexts of their own (catchUp): one that gives up leaves the round
// running, and the table it loads answers the callers after it.
func (b *Backend) startCatchUpLocked() {
	t := b.owners
	r := t.next
	t.next = nil
	t.running = true
	go func() {
		r.err = b.runCatchUp(b.base)
		t.mu.Lock()
		close(r.done)
		if t.next != nil {
			b.startCatchUpLocked()
		} else {
			t.running = false
		}
		t.mu.Unlock()
	}()
}

// runCatchUp brings the table to the registry's end offsets as of its
// start. ctx bounds the whole catch-up (it ends when the backend is
// closed); each request has a timeout of its own.
func (b *Backend) runCatchUp(ctx context.Context) error {
	t := b.owners
	at := b.observed.now()
	t.mu.Lock()
	full := t.full || t.loadedAt.IsZero() || at.Sub(t.loadedAt) > reloadAfter
	known := t.known
	t.mu.Unlock()
	// A full load reads the metadata too: a registry deleted and created
	// again is known by its topic ID, even where no request of this
	// backend failed on it.
	if !known || full {
		if err := b.registryMetadata(ctx); err != nil {
			return err
		}
	}
	err := b.fetchRegistry(ctx, full, at)
	if errors.Is(err, errReload) && !full {
		// The log no longer holds what the table read: its tail lost (a
		// wiped log directory, an unclean election) or its start moved
		// past it (records deleted). Records this installation wrote may
		// be gone with the same topic ID, which registryMetadata cannot
		// tell: the epoch moves, so that every Buckety of the backend
		// writes its record again (Sweeper.registryRecreated), not each
		// at its own re-check hours later.
		t.mu.Lock()
		t.epoch++
		t.mu.Unlock()
		full = true
		if err := b.registryMetadata(ctx); err != nil {
			return err
		}
		err = b.fetchRegistry(ctx, full, at)
	}
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.caughtUp = at
	if full {
		// loadedAt is set by fetchRegistry: the start of the load's first
		// try, which a load resumed is older than.
		t.full = false
	}
	t.mu.Unlock()
	return nil
}

// errReload: the log no longer holds where the table stopped (its start
// moved past it, or its end is before it).
var errReload = errors.New("the owner registry's log start moved past the table")

// registryMetadata learns the registry's partitions and topic ID, and
// creates the registry when Metadata reports it missing. Each request has
// a timeout of its own; waiting for a registry just created to show in
// the metadata ends one timeout after the first request was sent.
func (b *Backend) registryMetadata(ctx context.Context) error {
	topic := b.cfg.registryTopic()
	wait, cancelWait := b.ctx(ctx)
	defer cancelWait()
	for attempt := 0; ; attempt++ {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := b.ctx(ctx)
		resp, err := req.RequestWith(rctx, b.kgo)
		cancel()
		if err != nil {
			return b.classify(fmt.Errorf("owner registry %s: metadata: %w", topic, err))
		}
		if len(resp.Topics) != 1 {
			return fmt.Errorf("owner registry %s: metadata: the broker's answer does not mention the topic", topic)
		}
		mt := resp.Topics[0]
		err = kerr.ErrorForCode(mt.ErrorCode)
		switch {
		case err == nil && len(mt.Partitions) > 0:
			t := b.owners
			t.mu.Lock()
			recreated := t.topicID != ([16]byte{}) && mt.TopicID != t.topicID
			if recreated {
				// Deleted and created again since the table was read
				// (by hand, or with the whole cluster): what the table
				// holds, and where it stopped, are another log's.
				t.recs, t.parts, t.full, t.partial = map[string]ownerEntry{}, map[int32]*registryPartition{}, true, nil
				t.epoch++
			}
			t.known, t.topicID = true, mt.TopicID
			for _, p := range mt.Partitions {
				if t.parts[p.Partition] == nil {
					t.parts[p.Partition] = &registryPartition{}
				}
			}
			t.mu.Unlock()
			if recreated {
				b.forgetRegistryTopicID(topic)
			}
			// Read once the registry is known, and at once for one
			// created again, whose configs are its creator's.
			jctx, cancel := b.ctx(ctx)
			b.judgeRegistry(jctx, mt.TopicID)
			cancel()
			return nil
		case err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) && !errors.Is(err, kerr.LeaderNotAvailable):
			return b.classify(fmt.Errorf("owner registry %s: metadata: %w", topic, err))
		}
		if attempt == 0 && errors.Is(err, kerr.UnknownTopicOrPartition) {
			created, err := b.createRegistry(ctx)
			if err != nil {
				return err
			}
			if created {
				// It did not exist: whatever the table held is gone.
				t := b.owners
				t.mu.Lock()
				t.recs, t.parts, t.full, t.partial = map[string]ownerEntry{}, map[int32]*registryPartition{}, true, nil
				t.mu.Unlock()
			}
		}
		// Created, or created by another installation a moment ago:
		// its metadata reaches the brokers shortly.
		select {
		case <-wait.Done():
			return b.classify(fmt.Errorf("owner registry %s: metadata: %w", topic, wait.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createRegistry creates the registry topic; created is false when it
// existed already.
func (b *Backend) createRegistry(ctx context.Context) (created bool, err error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	topic := b.cfg.registryTopic()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(b.cfg.timeout().Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions = 1
	rt.ReplicationFactor = -1
	cf := kmsg.NewCreateTopicsRequestTopicConfig()
	cf.Name, cf.Value = "cleanup.policy", kmsg.StringPtr("compact")
	rt.Configs = append(rt.Configs, cf)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		return false, b.classify(fmt.Errorf("create owner registry %s: %w", topic, err))
	}
	if len(resp.Topics) != 1 {
		return false, fmt.Errorf("create owner registry %s: the broker's answer does not mention the topic", topic)
	}
	switch err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); {
	case err == nil:
		return true, nil
	case errors.Is(err, kerr.TopicAlreadyExists):
		return false, nil
	default:
		return false, b.classify(fmt.Errorf("create owner registry %s: %w %s", topic, err, unptr(resp.Topics[0].ErrorMessage)))
	}
}

// fetchRegistry reads the registry's end offsets (one ListOffsets per
// partition leader) and fetches every partition from where the table
// stopped, or from its start when full, to those end offsets; at is when
// the catch-up began.
//
// A full load that fails after it read some of the log keeps what it
// read (ownerTable.partial), and the next catch-up, full too, resumes it
// from where it stopped: a registry whose load takes many requests is
// loaded even when some fail now and then, not only when all of one try
// succeed. A load is not resumed on another log (the registry was created
// again, or lost the tail it read), nor once it is older than reloadAfter,
// the bound full loads keep on a table's age.
func (b *Backend) fetchRegistry(ctx context.Context, full bool, at time.Time) error {
	topic := b.cfg.registryTopic()
	t := b.owners
	t.mu.Lock()
	n := int32(0)
	for p := range t.parts {
		n = max(n, p+1)
	}
	topicID := t.topicID
	// Where the table stood before the end offsets were asked: a write of
	// this backend acknowledged in between moves the table past them.
	before := map[int32]int64{}
	for p, rp := range t.parts {
		before[p] = rp.next
	}
	t.mu.Unlock()

	ends, leaders, err := b.registryEnds(ctx, topic, n)
	if err != nil {
		return err
	}
	if !full {
		for p, o := range before {
			if ends[p] < o {
				// The log ends before where the table stood: it is not
				// the log the table read (the registry was deleted and
				// created again), or it lost its tail.
				return errReload
			}
		}
	}
	var load *fullLoad
	next := map[int32]int64{}
	t.mu.Lock()
	if full {
		load, t.partial = t.partial, nil
		if load == nil || load.topicID != topicID || at.Sub(load.started) > reloadAfter || beyond(load.next, ends) {
			load = newFullLoad(topicID, at)
		}
		next = load.next
	} else {
		for p, rp := range t.parts {
			next[p] = rp.next
		}
	}
	t.mu.Unlock()
	// keep leaves what a full load read for the next to resume.
	keep := func() {
		if full {
			t.mu.Lock()
			t.partial, t.full = load, true
			t.mu.Unlock()
		}
	}
	var got []fetched
	for p := int32(0); p < n; p++ {
		for next[p] < ends[p] {
			batch, nextOffset, logStart, err := b.fetchPartition(ctx, leaders[p], topic, topicID, p, next[p])
			switch {
			case errors.Is(err, kerr.OffsetOutOfRange) && full && logStart > next[p]:
				load.dropBelow(p, logStart)
				next[p] = logStart
				continue
			case errors.Is(err, kerr.OffsetOutOfRange):
				return errReload
			case err != nil:
				b.forgetRegistry()
				keep()
				return err
			case nextOffset <= next[p]:
				keep()
				return fmt.Errorf("owner registry %s partition %d: a fetch at offset %d made no progress", topic, p, next[p])
			}
			if full {
				load.add(batch)
			} else {
				got = append(got, batch...)
			}
			next[p] = nextOffset
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if full {
		// Writes this backend made meanwhile, past what the load saw.
		lost := false
		for name, e := range t.recs {
			if e.offset >= next[e.partition] {
				// A record the load read of another partition (the
				// registry's partitions were added to) stands, as a
				// record read after it would.
				if have, ok := load.recs[name]; !ok || have.partition == e.partition {
					load.recs[name] = e
				}
				continue
			}
			if _, ok := load.read[name]; !ok && e.rec != nil {
				// A live record the table read is in no record of the
				// log now: compaction keeps a key's latest record (or
				// its tombstone), so it was deleted (DeleteRecords, a
				// retention a registry created by hand has), with the
				// same topic ID. The epoch moves, as for a lost tail,
				// so that every Buckety writes its record again now, not
				// at its re-check hours later.
				lost = true
			}
		}
		t.recs, t.loadedAt = load.recs, load.started
		if lost {
			t.epoch++
		}
	}
	for _, f := range got {
		t.apply(f.topic, f.entry)
	}
	for p, o := range next {
		if t.parts[p] == nil {
			t.parts[p] = &registryPartition{}
		}
		t.parts[p].next = max(t.parts[p].next, o)
		if full {
			t.parts[p].next = o
		}
		t.parts[p].advance()
	}
	return nil
}

// beyond: an offset of next is past its partition's end: the log lost
// the tail read up to it.
func beyond(next, ends map[int32]int64) bool {
	for p, o := range next {
		if e, ok := ends[p]; ok && o > e {
			return true
		}
	}
	return false
}

// forgetRegistryTopicID drops what the client knows of the registry
// topic: the producer keys a topic by its ID (Produce v13 on), and answers
// UNKNOWN_TOPIC_ID for a registry deleted and created again until the
// topic is purged from the client (franz-go's rule); its next write then
// learns the new one.
func (b *Backend) forgetRegistryTopicID(topic string) {
	b.kgo.PurgeTopicsFromClient(topic)
}

// forgetRegistry makes the next catch-up read the registry's metadata
// again (a partition moved, or the topic is gone).
func (b *Backend) forgetRegistry() {
	t := b.owners
	t.mu.Lock()
	t.known = false
	t.mu.Unlock()
}

// fetched is one record of the registry, decoded.
type fetched struct {
	topic string
	entry ownerEntry
}

// registryEnds lists the end offset and leader of every registry
// partition.
func (b *Backend) registryEnds(ctx context.Context, topic string, n int32) (map[int32]int64, map[int32]int32, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < n; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ends := map[int32]int64{}
	leaders := map[int32]int32{}
	for _, sh := range b.kgo.RequestSharded(ctx, req) {
		if sh.Err != nil {
			b.forgetRegistry()
			return nil, nil, b.classify(fmt.Errorf("owner registry %s: list end offsets: %w", topic, sh.Err))
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					b.forgetRegistry()
					return nil, nil, b.classify(fmt.Errorf("owner registry %s partition %d: list end offset: %w", topic, p.Partition, err))
				}
				ends[p.Partition], leaders[p.Partition] = p.Offset, sh.Meta.NodeID
			}
		}
	}
	for p := int32(0); p < n; p++ {
		if _, ok := ends[p]; !ok {
			b.forgetRegistry()
			return nil, nil, fmt.Errorf("owner registry %s partition %d: no end offset in the broker's answer", topic, p)
		}
	}
	return ends, leaders, nil
}

// fetchPartition fetches one registry partition from offset, from its
// leader, and decodes its records.
func (b *Backend) fetchPartition(ctx context.Context, leader int32, topic string, topicID [16]byte, partition int32, offset int64) (recs []fetched, next, logStart int64, err error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 64 << 20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = partition, offset, 16<<20
	fp.LogStartOffset, fp.CurrentLeaderEpoch = -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	kresp, err := b.kgo.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return nil, 0, 0, b.classify(fmt.Errorf("owner registry %s partition %d: fetch at %d: %w", topic, partition, offset, err))
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, 0, 0, b.classify(fmt.Errorf("owner registry %s: fetch: %w", topic, err))
	}
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			if rp.Partition != partition {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, 0, rp.LogStartOffset, fmt.Errorf("owner registry %s partition %d: fetch at %d: %w", topic, partition, offset, err)
			}
			part, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: offset, Topic: topic, Partition: partition}, rp, kgo.DefaultDecompressor(), nil)
			if part.Err != nil {
				return nil, 0, 0, fmt.Errorf("owner registry %s partition %d: decode records at %d: %w", topic, partition, offset, part.Err)
			}
			for _, r := range part.Records {
				e := ownerEntry{partition: r.Partition, offset: r.Offset}
				if r.Value != nil {
					var rec drivers.OwnerRecord
					if err := json.Unmarshal(r.Value, &rec); err != nil {
						e.err = fmt.Errorf("not an owner record: %w", err)
					} else {
						e.rec = &rec
					}
				}
				recs = append(recs, fetched{topic: string(r.Key), entry: e})
			}
			return recs, next, rp.LogStartOffset, nil
		}
	}
	return nil, 0, 0, fmt.Errorf("owner registry %s partition %d: the broker's fetch answer does not mention the partition", topic, partition)
}
