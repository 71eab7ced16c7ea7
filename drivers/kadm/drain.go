package kadm

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// Drain: a topic is emptied with DeleteRecords up to each partition's high
// watermark, which moves the partitions' log start offsets (low
// watermarks) and keeps the topic, its partitions and its configs. Kafka
// refuses DeleteRecords on a topic whose cleanup.policy is compact only
// (POLICY_VIOLATION): such a topic is emptied by compaction, not by
// offsets, so it cannot be drained.

var _ drivers.Drainer = (*Backend)(nil)

// Drain implements drivers.Drainer. One step reads the topic's metadata
// and configs, lists every partition's start and end offsets, sends one
// DeleteRecords (one request per partition leader) up to the end offsets
// of the partitions that hold records, and lists the end offsets again:
// Remaining is the records between the new low watermarks and the end
// offsets then (records produced while the step ran), and Done is true
// when there are none. limits.Units does not apply: a DeleteRecords costs
// the broker the same whatever it deletes. It refuses the owner registry
// and Kafka's internal ("__") topics, a missing topic, a topic whose ID
// is not the one its owner record names, and a topic whose cleanup.policy
// does not include delete.
func (b *Backend) Drain(ctx context.Context, r drivers.Resource, limits drivers.DrainLimits) (drivers.DrainStep, error) {
	step := drivers.DrainStep{Deleted: drivers.Content{Known: true}}
	name := r.Name
	if err := b.refuseRegistry(name); err != nil {
		return step, err
	}
	if strings.HasPrefix(name, "__") {
		return step, fmt.Errorf("kadm: backend %s: %s is one of Kafka's internal topics (its name starts with \"__\"), not a tenant's topic: buckety does not drain it", b.name, name)
	}
	// Each phase has the request timeout of its own: DeleteRecords may
	// take up to its timeout on a broker waiting for followers.
	phase := func(f func(ctx context.Context)) {
		ctx, cancel := b.ctx(ctx)
		defer cancel()
		f(ctx)
	}
	var st topicState
	var err error
	phase(func(ctx context.Context) { st, err = b.describe(ctx, name, true) })
	step.Requests += 2
	if err != nil {
		return step, b.classify(fmt.Errorf("drain topic %s: %w", name, err))
	}
	if !st.exists {
		step.Requests--
		return step, fmt.Errorf("kadm: backend %s: topic %s does not exist: there is nothing to drain", b.name, name)
	}
	// A topic whose ID is not its owner record's was created under the
	// name since the record's topic was deleted out of band: its records
	// are not this Buckety's to delete (topicid.go).
	var cerr error
	phase(func(ctx context.Context) { _, cerr = b.checkTopicIDFresh(ctx, opDrain, name, st.id) })
	if cerr != nil {
		return step, cerr
	}
	if p, ok := st.dynamic["cleanup.policy"]; ok && !hasDeletePolicy(p) {
		return step, compactedError(b.name, name, fmt.Sprintf("its cleanup.policy is %q", p))
	}
	parts := map[string]int32{name: st.partitions}
	var start, end map[string]map[int32]int64
	var errs map[string]error
	var n int
	phase(func(ctx context.Context) { start, errs, n = b.listOffsetsCounted(ctx, parts, -2, "start") })
	step.Requests += n
	if err := errs[name]; err != nil {
		return step, b.classify(err)
	}
	phase(func(ctx context.Context) { end, errs, n = b.listOffsetsCounted(ctx, parts, -1, "end") })
	step.Requests += n
	if err := errs[name]; err != nil {
		return step, b.classify(err)
	}
	low, high := start[name], end[name]
	upTo := map[int32]int64{}
	for p := range st.partitions {
		s, okS := low[p]
		e, okE := high[p]
		if !okS || !okE {
			return step, fmt.Errorf("drain topic %s: the broker listed no offsets for partition %d", name, p)
		}
		if e > s {
			upTo[p] = e
		}
	}
	if len(upTo) == 0 {
		step.Done = true
		step.Remaining = drivers.Content{Known: true}
		return step, nil
	}
	if limits.Stop != nil && limits.Stop() {
		// Called off while the offsets were read: nothing deleted.
		return step, nil
	}
	var lows map[int32]int64
	phase(func(ctx context.Context) { lows, n, err = b.deleteRecords(ctx, name, upTo) })
	step.Requests += n
	// What partitions answered for is deleted, even when others failed.
	for p, l := range lows {
		step.Deleted.Objects += l - low[p]
		low[p] = l
	}
	if err != nil {
		return step, err
	}
	phase(func(ctx context.Context) { end, errs, n = b.listOffsetsCounted(ctx, parts, -1, "end") })
	step.Requests += n
	if err := errs[name]; err != nil {
		return step, b.classify(err)
	}
	step.Remaining.Known = true
	for p := range st.partitions {
		if e := end[name][p]; e > low[p] {
			step.Remaining.Objects += e - low[p]
		}
	}
	step.Done = step.Remaining.Objects == 0
	return step, nil
}

// deleteRecords deletes the records of topic's partitions before the
// offsets in upTo, in one DeleteRecords request per partition leader, and
// returns each partition's new low watermark and the requests it sent.
func (b *Backend) deleteRecords(ctx context.Context, topic string, upTo map[int32]int64) (map[int32]int64, int, error) {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(b.cfg.timeout().Milliseconds())
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for p, o := range upTo {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition = p
		rp.Offset = o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	shards := b.kgo.RequestSharded(ctx, req)
	lows := make(map[int32]int64, len(upTo))
	var errs []error
	for _, sh := range shards {
		if sh.Err != nil {
			errs = append(errs, b.classify(fmt.Errorf("delete records of %s: %w", topic, sh.Err)))
			continue
		}
		for _, t := range sh.Resp.(*kmsg.DeleteRecordsResponse).Topics {
			for _, p := range t.Partitions {
				err := kerr.ErrorForCode(p.ErrorCode)
				switch {
				case errors.Is(err, kerr.PolicyViolation):
					errs = append(errs, compactedError(b.name, topic, fmt.Sprintf("partition %d: the broker refused DeleteRecords with POLICY_VIOLATION, so the topic's cleanup.policy does not include delete", p.Partition)))
				case err != nil:
					errs = append(errs, b.classify(fmt.Errorf("delete records of %s partition %d up to offset %d: %w", topic, p.Partition, upTo[p.Partition], err)))
				default:
					lows[p.Partition] = p.LowWatermark
				}
			}
		}
	}
	if len(errs) > 0 {
		return lows, len(shards), errs[0]
	}
	for p := range upTo {
		if _, ok := lows[p]; !ok {
			return lows, len(shards), fmt.Errorf("delete records of %s: the broker's answer does not mention partition %d", topic, p)
		}
	}
	return lows, len(shards), nil
}

// hasDeletePolicy reports whether a cleanup.policy value ("delete",
// "compact", "compact,delete") includes delete.
func hasDeletePolicy(policy string) bool {
	for _, p := range strings.Split(policy, ",") {
		if strings.TrimSpace(p) == "delete" {
			return true
		}
	}
	return false
}

// compactedError is the refusal of a drain of a topic whose cleanup.policy
// does not include delete.
func compactedError(backend, topic, why string) error {
	return fmt.Errorf("kadm: backend %s: topic %s cannot be drained: %s; Kafka refuses DeleteRecords on a topic that is only compacted: "+
		"set its cleanup.policy to include delete (config.cleanup.policy: delete, or compact,delete) to drain it", backend, topic, why)
}
