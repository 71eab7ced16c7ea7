package kadm

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/runtime/strmap"
)

// Observations. A reconcile asks Ensure about its topic on every pass: the
// pass that creates it, the passes its own status writes and its accesses
// trigger, and the first pass of every Buckety when the controller starts.
// Reading the topic every time costs a Metadata and a DescribeConfigs per
// pass, however rarely anything changed. So the Backend remembers what it
// last saw of each topic, and when: the answers of its full reads (Ensure's
// describe, Inspect's "missing", every sweep) and the results of its own
// writes (a create, a converge, a delete). Ensure answers from an
// observation younger than the caller's Resource.MaxAge only when it shows
// nothing to write: a topic in sync is reported in sync; a topic seen
// missing goes straight to CreateTopics, which cannot harm a topic that
// appeared meanwhile (the broker refuses, and Ensure reads it then). An
// observation that shows a change is never acted on: the topic is read
// again first. A dry run always reads.
//
// Observations are dropped when a request fails as unreachable (a broker
// that went away may come back without what it had), a topic's when a write
// to it failed or got no answer (a hung broker may still carry it out), and
// they expire after the largest MaxAge asked for.
//
// Reads and writes of a topic overlap (a sweep reads every topic while
// Ensure writes some), so each observation carries a time, and which one
// stands follows from what each could have seen. A read is recorded as of
// when it was sent (put): the broker may have answered it from any moment
// between then and its answer. A write's result is recorded as of its
// answer (wrote): only then is it known to hold. A read is therefore not
// recorded over anything recorded as of after it was sent: in particular a
// read sent while a write was in flight may have been answered before the
// broker applied the write, and is refused once the write completed,
// whichever of the two is recorded first (the read recorded first is
// replaced by the write's result). A write's result replaces whatever was
// recorded before its answer, unless another write to the topic completed
// while it was in flight: in which order the broker applied the two is
// unknown, and the topic is in doubt until read again.
type observations struct {
	mu sync.Mutex
	m  map[string]observation
	// sweeps are the sweeps in flight; a call that finds no observation of
	// a topic a sweep is reading waits for the sweep instead of reading
	// the topic on its own (a controller's start: its sweep and its first
	// reconciles begin together).
	sweeps map[*sweepInFlight]struct{}
	// maxAge is the largest MaxAge asked for: older entries are pruned
	// (none before the first ask).
	maxAge time.Duration
	// cleared is when every observation made before it was dropped: all
	// of them by clear (an outage), or by a prune those older than the
	// largest MaxAge, with what they said of writes. A read sent before it
	// is not recorded when its answer comes late.
	cleared time.Time
	puts    int
	now     func() time.Time
	// configs are the shared dynamic config maps (shared).
	configs map[string]map[string]string
}

type observation struct {
	// st is the topic's state; st.exists false: seen missing. An existing
	// topic's observation always holds its dynamic configs.
	st topicState
	// at is when st held: a read's sending, a write's answer. It never
	// goes back for a topic: a read sent before it is refused.
	at time.Time
	// wroteAt is when the last write to the topic completed (its answer,
	// or its failure); a read that replaces the write's result keeps it. A
	// write sent before it overlapped that one.
	wroteAt time.Time
	// doubt marks a topic whose last write failed or got no answer, or
	// overlapped another write: get finds nothing, and put refuses what a
	// read that started before the doubt saw (a Metadata sent before a
	// create that got no answer can be answered after it, still showing
	// the topic missing).
	doubt bool
}

// sweepInFlight is a sweep being read, chunk by chunk: a topic's
// observation is recorded when its chunk is done.
type sweepInFlight struct {
	// topics maps each topic to the index of its chunk.
	topics map[string]int
	// done[i] is closed when chunk i is done (closed[i], under the
	// observations' lock).
	done   []chan struct{}
	closed []bool
}

// maxSharedConfigs bounds the table of shared config maps: past it, the
// table starts again (observations keep the maps they were given).
const maxSharedConfigs = 1 << 10

// shared returns a copy of m that equal observations share: most topics
// have the same dynamic configs (a shard's 25,000 topics, a few hundred
// bytes each when every one had its own). Observations never change a
// stored map (get hands out a copy). Called with o.mu held.
func (o *observations) shared(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	key, _ := strmap.Key(m)
	if got, ok := o.configs[key]; ok {
		return got
	}
	if o.configs == nil || len(o.configs) >= maxSharedConfigs {
		o.configs = make(map[string]map[string]string, 16)
	}
	c := maps.Clone(m)
	o.configs[key] = c
	return c
}

// pruneEvery is how many puts pass between prunes of expired entries.
const pruneEvery = 1024

func newObservations() *observations {
	return &observations{m: map[string]observation{}, sweeps: map[*sweepInFlight]struct{}{}, now: time.Now}
}

// get returns topic's observation when it was made within maxAge.
func (o *observations) get(topic string, maxAge time.Duration) (topicState, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if maxAge > o.maxAge {
		o.maxAge = maxAge
	}
	ob, ok := o.m[topic]
	if !ok || ob.doubt || o.now().Sub(ob.at) > maxAge {
		return topicState{}, false
	}
	st := ob.st
	st.dynamic = maps.Clone(st.dynamic)
	return st, true
}

// put records topic's state as a read saw it; at is when the read was
// sent (taken before sending, so that an observation never claims to be
// newer than it is). It is not recorded over an observation as of after
// at: a later read's, a write's that completed after at (the read may have
// been answered before the broker applied it), a doubt's.
func (o *observations) put(topic string, st topicState, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur, ok := o.m[topic]
	if ok && cur.at.After(at) {
		return // a newer observation, a write's result or a doubt
	}
	if o.cleared.After(at) {
		return // read before the outage (or the prune) that dropped it all
	}
	o.record(topic, observation{st: st, at: at, wroteAt: cur.wroteAt})
}

// wrote records topic's state after a write the broker answered as
// applied; sent is when the write (the first of its requests) was sent.
// The state holds as of now, the answer. A write sent before another write
// to the topic completed overlapped it, and the topic is in doubt instead.
func (o *observations) wrote(topic string, st topicState, sent time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	if cur, ok := o.m[topic]; ok && cur.wroteAt.After(sent) {
		o.m[topic] = observation{doubt: true, at: now, wroteAt: now}
		return
	}
	o.record(topic, observation{st: st, at: now, wroteAt: now})
}

// record stores ob as topic's observation, pruning expired entries every
// pruneEvery records. Called with o.mu held.
func (o *observations) record(topic string, ob observation) {
	ob.st.dynamic = o.shared(ob.st.dynamic)
	o.m[topic] = ob
	// Until a caller has asked (a process's first sweep runs before its
	// first Ensure), the age that matters is unknown: pruning by 0 would
	// drop what the sweep just saw, 1024 at a time, and every Ensure after
	// it would read its topic again.
	if o.puts++; o.puts%pruneEvery == 0 && o.maxAge > 0 {
		now := o.now()
		for t, e := range o.m {
			if now.Sub(e.at) > o.maxAge {
				delete(o.m, t)
			}
		}
		// A pruned entry no longer refuses the late reads it refused (a
		// read sent before a write's answer or a doubt): reads sent before
		// the entries pruned are refused instead. They are older than any
		// MaxAge asked for.
		if floor := now.Add(-o.maxAge); floor.After(o.cleared) {
			o.cleared = floor
		}
	}
}

// forget drops topic's observation: a write to it failed or got no answer,
// so what it holds is unknown until a read that starts now. It counts as
// the write's completion: a write in flight meanwhile overlapped it.
func (o *observations) forget(topic string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	o.m[topic] = observation{doubt: true, at: now, wroteAt: now}
}

// clear drops every observation, and what reads in flight will answer.
func (o *observations) clear() {
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.m)
	o.cleared = o.now()
}

// startSweep registers a sweep of topics in one chunk; call the returned
// func when its observations are recorded.
func (o *observations) startSweep(topics []string) func() {
	_, end := o.startSweepChunks([][]string{topics})
	return end
}

// startSweepChunks registers a sweep that reads chunks one after another:
// call chunkDone(i) when chunk i's observations are recorded, so the calls
// waiting for its topics go on while the rest is read, and end when the
// sweep ends (it finishes every chunk not done).
func (o *observations) startSweepChunks(chunks [][]string) (chunkDone func(int), end func()) {
	s := &sweepInFlight{topics: map[string]int{}, done: make([]chan struct{}, len(chunks)), closed: make([]bool, len(chunks))}
	for i, c := range chunks {
		s.done[i] = make(chan struct{})
		for _, t := range c {
			s.topics[t] = i
		}
	}
	o.mu.Lock()
	o.sweeps[s] = struct{}{}
	o.mu.Unlock()
	finish := func(i int) {
		if !s.closed[i] {
			s.closed[i] = true
			close(s.done[i])
		}
	}
	chunkDone = func(i int) {
		o.mu.Lock()
		defer o.mu.Unlock()
		finish(i)
	}
	end = func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.sweeps, s)
		for i := range s.done {
			finish(i)
		}
	}
	return chunkDone, end
}

// awaitSweep waits until every sweep in flight that reads topic has read
// it (recorded the observations of its chunk), or for ctx to end.
func (o *observations) awaitSweep(ctx context.Context, topic string) {
	o.mu.Lock()
	var done []chan struct{}
	for s := range o.sweeps {
		if i, ok := s.topics[topic]; ok {
			done = append(done, s.done[i])
		}
	}
	o.mu.Unlock()
	for _, d := range done {
		select {
		case <-d:
		case <-ctx.Done():
			return
		}
	}
}

// recent returns a recent enough observation of r's topic for Ensure to act
// on (see the comment at the top): none for a dry run or a MaxAge of 0.
func (b *Backend) recent(ctx context.Context, r drivers.Resource) (topicState, bool) {
	if r.MaxAge <= 0 || r.DryRun {
		return topicState{}, false
	}
	if st, ok := b.observed.get(r.Name, r.MaxAge); ok {
		return st, true
	}
	b.observed.awaitSweep(ctx, r.Name)
	return b.observed.get(r.Name, r.MaxAge)
}

// applied is st after p's writes succeeded.
func applied(st topicState, p plan) topicState {
	st.dynamic = maps.Clone(st.dynamic)
	if st.dynamic == nil {
		st.dynamic = map[string]string{}
	}
	if p.growTo > 0 {
		st.partitions = p.growTo
	}
	for _, a := range p.alters {
		switch a.Op {
		case kadm.DeleteConfig:
			delete(st.dynamic, a.Name)
		case kadm.SetConfig:
			st.dynamic[a.Name] = unptr(a.Value)
		}
	}
	return st
}
