package kadm

import (
	"sync/atomic"
)

// The client's metadata cache. franz-go keeps the answer to every
// Metadata request sent through the client (and to the Metadata it sends
// itself to shard a ListOffsets) in a per-topic cache, for sharded
// requests to find leaders in. Entries are dropped only when a later
// Metadata answer is stored more than MetadataMinAge after them, so after
// a sweep or a usage measurement of every topic the whole cluster's
// metadata stays in memory until the next one: about 1.5 KiB per topic,
// 14.5 MiB of the controller's heap at 10,000 topics. The backend keeps
// what it needs in its own observations (observed.go) and never reads that
// cache between sweeps, so after a bulk read it purges the topics it read.

// metaPurge runs at most one purge at a time.
type metaPurge struct {
	running atomic.Bool
}

// forgetMetadata drops topics from the client's metadata cache. It does
// not wait: the purge runs on the client's metadata goroutine, which may
// be busy with a slow broker, and a bulk read must not wait for it. While
// one purge runs, another is skipped (the next bulk read purges again).
func (b *Backend) forgetMetadata(topics []string) {
	if len(topics) == 0 || !b.purge.running.CompareAndSwap(false, true) {
		return
	}
	topics = append([]string(nil), topics...) // the client sorts them
	go func() {
		defer b.purge.running.Store(false)
		b.kgo.PurgeTopicsFromClient(topics...)
	}()
}
