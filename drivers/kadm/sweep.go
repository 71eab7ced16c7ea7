package kadm

import (
	"context"
	"fmt"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
)

var _ drivers.Sweeper = (*Backend)(nil)

// SweepCoverage implements drivers.Sweeper: a sweep reads the same state
// Ensure reads (partition count, replication factor, every dynamic config)
// and judges it with the same planFor, so it sees all drift Ensure repairs
// or reports.
func (b *Backend) SweepCoverage() drivers.SweepCoverage { return drivers.SweepComplete }

// Sweep implements drivers.Sweeper: Metadata requests for the topics'
// existence, partitions and replication factor (one per 5000 topics), and
// DescribeConfigs requests for the dynamic configs of those that exist (one
// per sweepConfigsFactor × maxBatch, 1000): a sweep of N topics costs
// ⌈N/5000⌉ + ⌈N/1000⌉ requests (2 for 1000, 12 for 10,000, 30 for a shard
// of 25,000), where a re-check with Ensure costs two per topic. Every request has its own requestTimeout. The requests are
// sent directly, not through the coalescing batchers, so a sweep does not
// wait for a linger and its size does not depend on what else is in
// flight.
//
// The configs are read chunk by chunk, and each chunk's observations are
// recorded as soon as it is read: an Ensure waiting for the sweep (a
// controller's start, when every Buckety's first pass comes with the
// first sweep) waits for its topic's chunk, not for the whole sweep, which
// at 10,000 topics is 22 requests long.
func (b *Backend) Sweep(ctx context.Context, rs []drivers.Resource) ([]drivers.SweepVerdict, error) {
	out := make([]drivers.SweepVerdict, len(rs))
	// A topic named twice (two Bucketies on one name cannot both hold the
	// claim, but the caller's view may lag) is asked about once.
	idx := map[string][]int{}
	var topics []string
	for i, r := range rs {
		if _, ok := idx[r.Name]; !ok {
			topics = append(topics, r.Name)
		}
		idx[r.Name] = append(idx[r.Name], i)
	}
	size := b.configs.max * sweepConfigsFactor
	var chunks [][]string
	for start := 0; start < len(topics); start += size {
		chunks = append(chunks, topics[start:min(start+size, len(topics))])
	}
	// What the sweep sees is recorded as observations (observed.go); an
	// Ensure that finds none for a topic this sweep reads waits for its
	// chunk.
	chunkDone, end := b.observed.startSweepChunks(chunks)
	defer end()
	defer b.forgetMetadata(topics)
	// One Metadata request serves this many chunks.
	per := max(1, b.metadata.max/size)
	for g := 0; g < len(chunks); g += per {
		group := chunks[g:min(g+per, len(chunks))]
		var names []string
		for _, chunk := range group {
			names = append(names, chunk...)
		}
		// Observations are as of before the Metadata request: one an
		// Ensure records meanwhile is newer and stands.
		at := b.observed.now()
		metas, err := b.metadataOf(ctx, names)
		if err != nil {
			return nil, err
		}
		byTopic := make(map[string]*call[struct{}, topicState], len(metas))
		for _, c := range metas {
			byTopic[c.topic] = c
		}
		for i, chunk := range group {
			if err := b.sweepChunk(ctx, at, chunk, byTopic, rs, idx, out); err != nil {
				return nil, err
			}
			chunkDone(g + i)
		}
	}
	return out, nil
}

// sweepConfigsFactor makes a sweep's DescribeConfigs chunk that many times
// maxBatch. A sweep is one request after another, not concurrent calls
// sharing a request, and a shard of 25,000 topics would cost 55 requests
// per window at 500 (issue 54's bound is 40); an answer of 1000 topics'
// configs is a few MB, read and judged one chunk at a time.
const sweepConfigsFactor = 2

// sweepChunk judges one chunk of a sweep (at most sweepConfigsFactor ×
// maxBatch topics) from its topics' metadata and one DescribeConfigs
// request, records what it saw and fills in the verdicts of the resources
// on its topics.
func (b *Backend) sweepChunk(ctx context.Context, at time.Time, chunk []string, metas map[string]*call[struct{}, topicState], rs []drivers.Resource, idx map[string][]int, out []drivers.SweepVerdict) error {
	states := make(map[string]topicState, len(chunk))
	var existing []*call[struct{}, map[string]string]
	for _, topic := range chunk {
		c := metas[topic]
		switch {
		case c.err != nil:
			for _, i := range idx[c.topic] {
				out[i].Err = c.err
			}
		case !c.out.exists:
			b.observed.put(c.topic, c.out, at)
			for _, i := range idx[c.topic] {
				out[i].Changes = []string{fmt.Sprintf("topic %s does not exist", c.topic)}
			}
		default:
			states[c.topic] = c.out
			existing = append(existing, &call[struct{}, map[string]string]{topic: c.topic})
		}
	}
	if len(existing) == 0 {
		return nil
	}
	if err := sweepRequest(ctx, b, b.execConfigs, existing); err != nil {
		return err
	}
	for _, c := range existing {
		if c.err != nil {
			for _, i := range idx[c.topic] {
				out[i].Err = c.err
			}
			continue
		}
		st := states[c.topic]
		st.dynamic = c.out
		b.observed.put(c.topic, st, at)
		for _, i := range idx[c.topic] {
			p := planFor(parseParams(rs[i].Parameters), st)
			out[i].Changes, out[i].Drift = p.changes, p.drift
		}
	}
	return nil
}

// sweepRequest sends one request of a sweep under the backend's
// requestTimeout. A request that failed as a whole (every topic got an
// unavailability or access error: the broker could not be reached, or
// refuses buckety everywhere) fails the sweep; an error about some topics
// is theirs alone.
func sweepRequest[In, Out any](ctx context.Context, b *Backend, exec func(context.Context, []*call[In, Out]), calls []*call[In, Out]) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	exec(ctx, calls)
	var first error
	for _, c := range calls {
		if c.err == nil || !(drivers.IsUnavailable(c.err) || drivers.IsAccessDenied(c.err)) {
			return nil
		}
		if first == nil {
			first = c.err
		}
	}
	return first
}
