package kadm

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
)

// Request coalescing. The controller reconciles many Bucketies at once, and
// each reconcile asks about one topic. Kafka's admin APIs take many topics
// per request, and a broker answers a 1000-topic request about as fast as a
// one-topic one, so the Backend merges concurrent calls: every kind of
// request (Metadata, DescribeConfigs, CreateTopics, CreatePartitions,
// IncrementalAlterConfigs, DeleteTopics, ListOffsets) has a batcher that
// collects the topics asked for during a short linger and sends them as one
// request. The caller does not see it:
//
//   - each call gets its own topic's result and error, never another's;
//   - a call whose context ends returns at once with its context's error; the
//     request it was part of goes on for the others, and is cancelled only
//     when every caller in it has given up (a call that ended before its
//     batch was sent is left out of the request);
//   - the request runs under its own requestTimeout, so a call still returns
//     within its own requestTimeout, as before;
//   - a batch is at most maxBatch topics, and a call waits at most linger
//     before its request is sent.
//
// Reads (Metadata, DescribeConfigs, ListOffsets) of one topic asked for twice
// in one batch share one answer. Two writes to one topic are never put in one
// request (Kafka refuses a topic named twice): the second waits for the next
// batch. As without coalescing, concurrent writes to one topic have no
// defined order; the controller never makes them (one reconcile per object
// at a time, one object per topic).
const (
	// defaultLinger is how long the first call of a batch waits for others.
	// It is what a lone call pays per request; 5 ms is well below a
	// reconcile's other costs, and enough for the controller's concurrent
	// workers to meet in one request.
	defaultLinger = 5 * time.Millisecond
	// defaultMaxBatch bounds the topics in one request, and so the size of a
	// request and its answer (a DescribeConfigs answer is a few hundred
	// bytes per config per topic).
	defaultMaxBatch = 500
	// metadataBatchFactor makes a Metadata request's bound that many
	// times maxBatch (5000 topics by default). A Metadata answer is tens of
	// bytes per partition, a hundredth of a DescribeConfigs answer, and
	// Kafka's own clients ask for every topic of a cluster in one: the
	// sweep and the usage refresh of 10,000 topics then cost 2 Metadata
	// requests, not 20.
	metadataBatchFactor = 10
)

// call is one caller's part of a batch.
type call[In, Out any] struct {
	ctx   context.Context
	topic string
	in    In
	out   Out
	err   error
	done  chan struct{}
	// followers asked for the same topic in the same batch (reads only);
	// they get this call's answer.
	followers []*call[In, Out]
}

// batcher merges concurrent calls into requests of many topics.
type batcher[In, Out any] struct {
	// shared: calls for a topic already in the batch share its answer
	// (reads); otherwise they wait for the next batch (writes).
	shared  bool
	linger  time.Duration
	max     int
	timeout time.Duration
	// base ends when the backend is closed.
	base context.Context
	// exec sends one request for the calls (distinct topics) and sets each
	// call's out and err.
	exec func(ctx context.Context, calls []*call[In, Out])

	mu      sync.Mutex
	pending []*call[In, Out]
	timer   *time.Timer
	gen     uint64 // invalidates a timer that fired after a flush
}

func newBatcher[In, Out any](base context.Context, shared bool, linger time.Duration, max int, timeout time.Duration, exec func(context.Context, []*call[In, Out])) *batcher[In, Out] {
	return &batcher[In, Out]{shared: shared, linger: linger, max: max, timeout: timeout, base: base, exec: exec}
}

// do asks for one topic and waits for its answer or the end of ctx.
func (b *batcher[In, Out]) do(ctx context.Context, topic string, in In) (Out, error) {
	c := &call[In, Out]{ctx: ctx, topic: topic, in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if len(b.pending) >= b.max {
		b.flushLocked()
	} else if b.timer == nil {
		b.armLocked()
	}
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.out, c.err
	case <-ctx.Done():
		var zero Out
		return zero, ctx.Err()
	}
}

func (b *batcher[In, Out]) armLocked() {
	gen := b.gen
	b.timer = time.AfterFunc(b.linger, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.gen == gen {
			b.flushLocked()
		}
	})
}

// flushLocked sends what is pending, in batches of at most max topics, and
// re-arms the timer for calls left for a later batch.
func (b *batcher[In, Out]) flushLocked() {
	b.gen++
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	for len(b.pending) > 0 {
		batch, rest := b.take(b.pending)
		b.pending = rest
		if len(batch) == 0 {
			break
		}
		go b.run(batch)
		if len(batch) < b.max || len(rest) < b.max {
			break // what is left waits for the timer
		}
	}
	if len(b.pending) > 0 {
		b.armLocked()
	}
}

// take picks up to max distinct topics from pending, in order; calls whose
// context has ended are dropped.
func (b *batcher[In, Out]) take(pending []*call[In, Out]) (batch, rest []*call[In, Out]) {
	byTopic := make(map[string]*call[In, Out], min(len(pending), b.max))
	for _, c := range pending {
		if c.ctx.Err() != nil {
			continue // its caller has returned
		}
		if first, ok := byTopic[c.topic]; ok {
			if b.shared {
				first.followers = append(first.followers, c)
			} else {
				rest = append(rest, c)
			}
			continue
		}
		if len(batch) == b.max {
			rest = append(rest, c)
			continue
		}
		byTopic[c.topic] = c
		batch = append(batch, c)
	}
	return batch, rest
}

// run sends one batch and answers its callers. The request has its own
// timeout and is cancelled early only when every caller has given up.
func (b *batcher[In, Out]) run(batch []*call[In, Out]) {
	ctx, cancel := context.WithTimeout(b.base, b.timeout)
	defer cancel()
	// Count every caller before watching any: a caller that has already
	// left must not bring the count to zero while others are still to come.
	var live atomic.Int64
	for _, c := range batch {
		live.Add(int64(1 + len(c.followers)))
	}
	var stops []func() bool
	for _, c := range batch {
		for _, w := range append([]*call[In, Out]{c}, c.followers...) {
			stops = append(stops, context.AfterFunc(w.ctx, func() {
				if live.Add(-1) == 0 {
					cancel()
				}
			}))
		}
	}
	b.exec(ctx, batch)
	for _, stop := range stops {
		stop()
	}
	for _, c := range batch {
		for _, f := range c.followers {
			f.out, f.err = c.out, c.err
			close(f.done)
		}
		close(c.done)
	}
}

// failRequest fails every call of a request that failed as a whole. A
// broker that could not be reached may come back without what it had, so
// the backend's observations are dropped.
func failRequest[In, Out any](b *Backend, calls []*call[In, Out], err error) {
	err = b.classify(err)
	if drivers.IsUnavailable(err) {
		b.observed.clear()
	}
	fail(calls, err)
}

// fail sets err on every call.
func fail[In, Out any](calls []*call[In, Out], err error) {
	for _, c := range calls {
		c.err = err
	}
}
