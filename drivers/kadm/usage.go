package kadm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
)

// Usage and footprint. Kafka answers for a whole cluster at once: one
// Metadata request (per 5000 topics) says which topics exist and their
// partitions, one DescribeLogDirs request per broker the size of every
// replica, and one ListOffsets request per partition leader the end
// offsets. Measuring a thousand topics costs what measuring one does, give
// or take a Metadata request per 5000.

// usageSource is Usage.Source of every measurement.
const usageSource = "DescribeLogDirs"

var _ drivers.UsageReporter = (*Backend)(nil)

// Usage implements drivers.UsageReporter. A topic's Bytes are the sizes of
// its partitions, one replica each (the largest: a follower that lags holds
// less, and kfake reports every partition on every broker), as
// retention.bytes counts them; EndOffsets sums its partitions' end offsets.
// A topic that does not exist, or whose every partition could not be
// measured, is not Known.
func (b *Backend) Usage(ctx context.Context, rs []drivers.Resource) ([]drivers.Usage, error) {
	topics := distinctNames(rs)
	defer b.forgetMetadata(topics)
	parts, err := b.partitionCounts(ctx, topics)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	sizes, err := b.replicaSizes(ctx, parts)
	if err != nil {
		return nil, err
	}
	ends, endErrs := b.endOffsets(ctx, parts)
	byTopic := make(map[string]drivers.Usage, len(parts))
	for topic, n := range parts {
		if endErrs[topic] != nil {
			continue
		}
		if u, ok := topicUsage(n, sizes[topic], ends[topic]); ok {
			u.MeasuredAt = at
			byTopic[topic] = u
		}
	}
	out := make([]drivers.Usage, len(rs))
	for i, r := range rs {
		out[i] = byTopic[r.Name] // absent: Known false
	}
	return out, nil
}

// distinctNames lists the names of rs, each once, in order.
func distinctNames(rs []drivers.Resource) []string {
	seen := make(map[string]bool, len(rs))
	var out []string
	for _, r := range rs {
		if !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r.Name)
		}
	}
	return out
}

// partitionCounts reads which topics exist and their partition counts:
// one Metadata request per 5000 topics. A topic the broker answered
// about with an error is left out, as a missing one is.
func (b *Backend) partitionCounts(ctx context.Context, topics []string) (map[string]int32, error) {
	out := make(map[string]int32, len(topics))
	calls, err := b.metadataOf(ctx, topics)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		if c.err == nil && c.out.exists {
			out[c.topic] = c.out.partitions
		}
	}
	return out, nil
}

// metadataOf reads the metadata of topics, one Metadata request per
// 5000 of them (maxBatch × metadataBatchFactor), as the sweep and the
// usage measurement do: a call per
// topic, with its answer or the broker's error about it.
func (b *Backend) metadataOf(ctx context.Context, topics []string) ([]*call[struct{}, topicState], error) {
	all := make([]*call[struct{}, topicState], 0, len(topics))
	max := b.metadata.max
	for start := 0; start < len(topics); start += max {
		chunk := topics[start:min(start+max, len(topics))]
		calls := make([]*call[struct{}, topicState], len(chunk))
		for i, t := range chunk {
			calls[i] = &call[struct{}, topicState]{topic: t}
		}
		if err := sweepRequest(ctx, b, b.execMetadata, calls); err != nil {
			return nil, err
		}
		all = append(all, calls...)
	}
	return all, nil
}

// replicaSizes reads the size of every partition of the topics in parts
// with DescribeLogDirs (one request per broker), keeping the largest
// replica of each. A broker that failed to answer, or a log directory in
// error, leaves its replicas out; when every broker failed, the
// measurement fails.
func (b *Backend) replicaSizes(ctx context.Context, parts map[string]int32) (map[string]map[int32]int64, error) {
	out := make(map[string]map[int32]int64, len(parts))
	if len(parts) == 0 {
		return out, nil
	}
	set := make(kadm.TopicsSet, len(parts))
	for topic, n := range parts {
		for p := int32(0); p < n; p++ {
			set.Add(topic, p)
		}
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	all, err := b.adm.DescribeAllLogDirs(ctx, set)
	if se, ok := errors.AsType[*kadm.ShardErrors](err); ok && !se.AllFailed {
		err = nil // some brokers answered: their replicas stand
	}
	if err != nil {
		return nil, b.classify(fmt.Errorf("describe log dirs: %w", err))
	}
	all.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.IsFuture || !set.Lookup(p.Topic, p.Partition) {
				return
			}
			if out[p.Topic] == nil {
				out[p.Topic] = map[int32]int64{}
			}
			if cur, ok := out[p.Topic][p.Partition]; !ok || p.Size > cur {
				out[p.Topic][p.Partition] = p.Size
			}
		})
	})
	return out, nil
}

// endOffsets lists the end offset of every partition of the topics in
// parts, one ListOffsets request per partition leader.
func (b *Backend) endOffsets(ctx context.Context, parts map[string]int32) (map[string]map[int32]int64, map[string]error) {
	if len(parts) == 0 {
		return nil, nil
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	return b.listOffsets(ctx, parts, -1, "end")
}

// topicUsage sums a topic's partitions; false when any partition's size or
// end offset is missing.
func topicUsage(partitions int32, sizes, ends map[int32]int64) (drivers.Usage, bool) {
	u := drivers.Usage{Known: true, Partitions: int64(partitions), Source: usageSource}
	for p := int32(0); p < partitions; p++ {
		size, okS := sizes[p]
		end, okE := ends[p]
		if !okS || !okE {
			return drivers.Usage{}, false
		}
		u.Bytes += size
		u.EndOffsets += end
	}
	return u, true
}

var _ drivers.FootprintMeasurer = (*Driver)(nil)

// Footprint implements drivers.FootprintMeasurer: a topic counts its
// partitions and, on disk, what each partition may keep: retention.bytes
// of closed segments plus its active segment, which Kafka never deletes
// (segment.bytes: with preallocate, its file takes that much from the
// start). Kafka deletes whole segments, oldest first, while what stays is
// at least retention.bytes (UnifiedLog.deleteRetentionSizeBreachedSegments),
// so a partition keeps less than retention.bytes plus one segment; and no
// segment holds more than segment.bytes, because Kafka rolls before an
// append would take the active one past it (LogSegment.shouldRoll) and
// refuses an append larger than segment.bytes (UnifiedLog.append:
// RecordBatchTooLargeException). Redpanda does not refuse it: it appends
// a batch to the active segment while that has any room left
// (disk_log_appender.cc), so a segment may hold segment.bytes plus one
// batch. A config.max.message.bytes the topic sets is therefore counted
// once more per partition: on Kafka that is room the tenant asked for and
// cannot use, on Redpanda the batch a segment can take past its size. The
// broker's default (1 MiB on both) is not: counting it would charge every
// topic for what Kafka never stores.
// Unbounded (-1): partitions left to the broker's default, whose
// num.partitions the parameters cannot tell; a disk figure without
// retention.bytes (or -1), without segment.bytes (the broker's default,
// 1 GiB unless it says otherwise), or compacted only (Kafka then deletes
// nothing by size). Refused under a disk budget: segments kept after
// their deletion past Kafka's default minute (file.delete.delay.ms), and
// index files above their default 10 MiB (segment.index.bytes), which
// the figure does not count.
func (*Driver) Footprint(_ drivers.Config, params map[string]string) drivers.Footprint {
	p := parseParams(params)
	f := drivers.Footprint{Partitions: -1, DiskBytes: -1, DiskRefused: diskRefused(p.configs)}
	if p.partitions > 0 {
		f.Partitions = int64(p.partitions)
	}
	f.DiskBytes, f.DiskUnboundedBy = diskBytes(p.configs, f.Partitions)
	return f
}

// The largest file.delete.delay.ms and segment.index.bytes a topic may
// set under a disk budget: Kafka's defaults.
const (
	maxFileDeleteDelayMs   = 60000
	maxSegmentIndexBytes   = 10 << 20
	configRetentionBytes   = ConfigPrefix + "retention.bytes"
	configSegmentBytes     = ConfigPrefix + "segment.bytes"
	configMaxMessageBytes  = ConfigPrefix + "max.message.bytes"
	configFileDeleteDelay  = ConfigPrefix + "file.delete.delay.ms"
	configSegmentIndexSize = ConfigPrefix + "segment.index.bytes"
)

// diskRefused lists the configs that hold disk the footprint does not
// count, each with why.
func diskRefused(configs map[string]string) map[string]string {
	var out map[string]string
	refuse := func(name, key string, limit int64, why string) {
		v, ok := configs[name]
		if !ok {
			return
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n <= limit {
			return
		}
		if out == nil {
			out = map[string]string{}
		}
		out[key] = why
	}
	refuse("file.delete.delay.ms", configFileDeleteDelay, maxFileDeleteDelayMs,
		"must be at most 60000 (Kafka's default) under a disk budget: a deleted segment stays on disk this long, uncounted")
	refuse("segment.index.bytes", configSegmentIndexSize, maxSegmentIndexBytes,
		"must be at most 10485760 (Kafka's default) under a disk budget: each partition's active segment preallocates two index files of this size, uncounted")
	return out
}

// diskBytes is (retention.bytes + segment.bytes + max.message.bytes, when
// the topic sets it) × partitions, saturated at the largest int64, or -1
// and the parameter that makes it unbounded (see Footprint).
// A topic with unbounded partitions is unbounded on disk too (the caller
// reports the partitions).
func diskBytes(configs map[string]string, partitions int64) (int64, string) {
	if policy, ok := configs["cleanup.policy"]; ok && !strings.Contains(policy, "delete") {
		return -1, configRetentionBytes // compaction alone: the fix is a deleting policy with retention.bytes
	}
	retention, err := strconv.ParseInt(configs["retention.bytes"], 10, 64)
	if err != nil || retention < 0 {
		return -1, configRetentionBytes
	}
	segment, err := strconv.ParseInt(configs["segment.bytes"], 10, 64)
	if err != nil || segment <= 0 {
		return -1, configSegmentBytes
	}
	if partitions < 0 {
		return -1, ParamPartitions
	}
	perPartition := drivers.AddSaturating(retention, segment)
	if v, ok := configs["max.message.bytes"]; ok {
		batch, err := strconv.ParseInt(v, 10, 64)
		if err != nil || batch < 0 {
			return -1, configMaxMessageBytes
		}
		perPartition = drivers.AddSaturating(perPartition, batch)
	}
	if partitions > 0 && perPartition > math.MaxInt64/partitions {
		return math.MaxInt64, ""
	}
	return perPartition * partitions, ""
}
