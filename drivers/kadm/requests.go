package kadm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request builders. Each exec function builds one Kafka admin request for a
// batch of calls (coalesce.go), each call about one topic, sends it, and
// hands every call its own topic's answer. The Backend's operations never
// build requests themselves: they ask the batchers, which run these.

// execMetadata asks for the metadata of many topics in one request.
func (b *Backend) execMetadata(ctx context.Context, calls []*call[struct{}, topicState]) {
	req := kmsg.NewPtrMetadataRequest()
	for _, c := range calls {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(c.topic)
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	byName := make(map[string]*kmsg.MetadataResponseTopic, len(resp.Topics))
	for i := range resp.Topics {
		if n := resp.Topics[i].Topic; n != nil {
			byName[*n] = &resp.Topics[i]
		}
	}
	for _, c := range calls {
		rt, ok := byName[c.topic]
		if !ok {
			c.err = fmt.Errorf("metadata for %s: the broker's answer does not mention the topic", c.topic)
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			if !errors.Is(err, kerr.UnknownTopicOrPartition) {
				c.err = fmt.Errorf("metadata for %s: %w", c.topic, err)
			}
			continue
		}
		st := topicState{exists: true, partitions: int32(len(rt.Partitions)), id: rt.TopicID}
		for _, p := range rt.Partitions {
			if rf := int16(len(p.Replicas)); rf > st.replicationFactor {
				st.replicationFactor = rf
			}
		}
		c.out = st
	}
}

// execConfigs reads the dynamic configs of many topics in one
// DescribeConfigs request.
func (b *Backend) execConfigs(ctx context.Context, calls []*call[struct{}, map[string]string]) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, c := range calls {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = c.topic
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	byName := make(map[string]*kmsg.DescribeConfigsResponseResource, len(resp.Resources))
	for i := range resp.Resources {
		byName[resp.Resources[i].ResourceName] = &resp.Resources[i]
	}
	for _, c := range calls {
		r, ok := byName[c.topic]
		if !ok {
			c.err = fmt.Errorf("describe configs of %s: the broker's answer does not mention the topic", c.topic)
			continue
		}
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			// Classified as before coalescing: kadm's DescribeTopicConfigs
			// failed the whole call, classified, on an authorization error.
			c.err = b.classify(fmt.Errorf("describe configs of %s: %w %s", c.topic, err, unptr(r.ErrorMessage)))
			continue
		}
		dyn := map[string]string{}
		for _, cf := range r.Configs {
			if cf.Source == kmsg.ConfigSourceDynamicTopicConfig {
				dyn[cf.Name] = unptr(cf.Value)
			}
		}
		c.out = dyn
	}
}

// execOffsets lists the start and end offsets of every partition of many
// topics: one ListOffsets request per partition leader for each.
func (b *Backend) execOffsets(ctx context.Context, calls []*call[int32, topicOffsets]) {
	parts := make(map[string]int32, len(calls))
	for _, c := range calls {
		parts[c.topic] = c.in
	}
	start, errs := b.listOffsets(ctx, parts, -2, "start")
	end, endErrs := b.listOffsets(ctx, parts, -1, "end")
	for _, c := range calls {
		if err := cmp.Or(errs[c.topic], endErrs[c.topic]); err != nil {
			c.err = err
			continue
		}
		c.out = contentOf(c.in, start[c.topic], end[c.topic])
	}
}

// contentOf counts the records between start and end offsets of a topic's
// partitions; a partition missing from either counts as content.
func contentOf(partitions int32, start, end map[int32]int64) topicOffsets {
	out := topicOffsets{first: -1}
	for p := int32(0); p < partitions; p++ {
		s, okS := start[p]
		e, okE := end[p]
		switch {
		case !okS || !okE:
			out.records++ // unknown: count as content
		case e > s:
			out.records += e - s
		default:
			continue
		}
		if out.first < 0 {
			out.first = p
		}
	}
	return out
}

// listOffsets lists one offset (timestamp -2: start, -1: end) of every
// partition of the topics in parts (topic: partition count), in one
// ListOffsets request per partition leader. A topic that could not be
// listed, whole or in part, has an error instead of offsets.
func (b *Backend) listOffsets(ctx context.Context, parts map[string]int32, timestamp int64, what string) (map[string]map[int32]int64, map[string]error) {
	got, errs, _ := b.listOffsetsCounted(ctx, parts, timestamp, what)
	return got, errs
}

// listOffsetsCounted is listOffsets, and how many requests it sent (one
// per partition leader).
func (b *Backend) listOffsetsCounted(ctx context.Context, parts map[string]int32, timestamp int64, what string) (map[string]map[int32]int64, map[string]error, int) {
	req := kmsg.NewPtrListOffsetsRequest()
	for _, topic := range slices.Sorted(maps.Keys(parts)) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for p := int32(0); p < parts[topic]; p++ {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = timestamp
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	got := make(map[string]map[int32]int64, len(parts))
	errs := make(map[string]error)
	shards := b.kgo.RequestSharded(ctx, req)
	for _, sh := range shards {
		if sh.Err != nil {
			for _, t := range sh.Req.(*kmsg.ListOffsetsRequest).Topics {
				if errs[t.Topic] == nil {
					errs[t.Topic] = fmt.Errorf("list %s offsets of %s: %w", what, t.Topic, sh.Err)
				}
			}
			continue
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			if got[t.Topic] == nil {
				got[t.Topic] = map[int32]int64{}
			}
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					if errs[t.Topic] == nil {
						errs[t.Topic] = fmt.Errorf("list %s offsets of %s partition %d: %w", what, t.Topic, p.Partition, err)
					}
					continue
				}
				got[t.Topic][p.Partition] = p.Offset
			}
		}
	}
	return got, errs, len(shards)
}

// createAnswer is what a CreateTopics answer says of one topic.
type createAnswer struct {
	// msg is the broker's error message.
	msg string
	// id is the created topic's ID (CreateTopics v7 on, Kafka 2.8), zero
	// from an older broker and for a topic not created.
	id topicID
}

// execCreates creates many topics, each with its own parameters, in one
// CreateTopics request. A call's out is the broker's error message and
// the created topic's ID.
func (b *Backend) execCreates(ctx context.Context, calls []*call[params, createAnswer]) {
	resp, err := createTopics(ctx, b, calls, false)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	byName := make(map[string]*kmsg.CreateTopicsResponseTopic, len(resp.Topics))
	for i := range resp.Topics {
		byName[resp.Topics[i].Topic] = &resp.Topics[i]
	}
	for _, c := range calls {
		a, ok := byName[c.topic]
		if !ok {
			c.err = errors.New("the broker's answer does not mention the topic")
			continue
		}
		c.err = kerr.ErrorForCode(a.ErrorCode)
		c.out = createAnswer{msg: unptr(a.ErrorMessage)}
		if c.err == nil {
			c.out.id = a.TopicID
		}
	}
}

// sendCreates sends one CreateTopics request for calls, and hands every
// call its topic's answer.
func (b *Backend) sendCreates(ctx context.Context, calls []*call[params, string], validateOnly bool) {
	resp, err := createTopics(ctx, b, calls, validateOnly)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	answerWrites(calls, resp.Topics, func(r *kmsg.CreateTopicsResponseTopic) (string, int16, *string) {
		return r.Topic, r.ErrorCode, r.ErrorMessage
	})
}

// createTopics sends one CreateTopics request of the calls' topics, each
// with its call's parameters.
func createTopics[Out any](ctx context.Context, b *Backend, calls []*call[params, Out], validateOnly bool) (*kmsg.CreateTopicsResponse, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(b.cfg.timeout().Milliseconds())
	req.ValidateOnly = validateOnly
	for _, c := range calls {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = c.topic
		t.NumPartitions = c.in.partitions
		t.ReplicationFactor = c.in.replicationFactor
		for _, k := range sortedKeys(c.in.configs) {
			cf := kmsg.NewCreateTopicsRequestTopicConfig()
			cf.Name = k
			cf.Value = kmsg.StringPtr(c.in.configs[k])
			t.Configs = append(t.Configs, cf)
		}
		req.Topics = append(req.Topics, t)
	}
	return req.RequestWith(ctx, b.kgo)
}

// execProbes asks, in one validate-only CreateTopics request, whether the
// controller would create many topics (Inspect's probe). A call's out is
// the broker's error message.
func (b *Backend) execProbes(ctx context.Context, calls []*call[params, string]) {
	b.sendCreates(ctx, calls, true)
}

// execPartitions grows many topics, each to its own count, in one
// CreatePartitions request.
func (b *Backend) execPartitions(ctx context.Context, calls []*call[int32, string]) {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(b.cfg.timeout().Milliseconds())
	for _, c := range calls {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic = c.topic
		t.Count = c.in
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	answerWrites(calls, resp.Topics, func(r *kmsg.CreatePartitionsResponseTopic) (string, int16, *string) {
		return r.Topic, r.ErrorCode, r.ErrorMessage
	})
}

// execAlters applies each topic's config changes, all in one
// IncrementalAlterConfigs request.
func (b *Backend) execAlters(ctx context.Context, calls []*call[[]kadm.AlterConfig, string]) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, c := range calls {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = c.topic
		for _, a := range c.in {
			cf := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cf.Name = a.Name
			cf.Op = kmsg.IncrementalAlterConfigOp(a.Op)
			cf.Value = a.Value
			r.Configs = append(r.Configs, cf)
		}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	answerWrites(calls, resp.Resources, func(r *kmsg.IncrementalAlterConfigsResponseResource) (string, int16, *string) {
		return r.ResourceName, r.ErrorCode, r.ErrorMessage
	})
}

// execDeletes deletes many topics in one DeleteTopics request: a call with
// a topic ID (its in) by that ID, so that it deletes only the topic its
// Delete read and never one created under the name since; a call without
// (a broker too old for topic IDs) by name. Every name goes in TopicNames
// too, which only versions before 6 send: a broker that takes no IDs
// deletes by name, as before.
func (b *Backend) execDeletes(ctx context.Context, calls []*call[topicID, string]) {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = int32(b.cfg.timeout().Milliseconds())
	for _, c := range calls {
		req.TopicNames = append(req.TopicNames, c.topic)
		t := kmsg.NewDeleteTopicsRequestTopic()
		// Kafka refuses an entry with both a name and an ID.
		if c.in == (topicID{}) {
			t.Topic = kmsg.StringPtr(c.topic)
		} else {
			t.TopicID = c.in
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	// An entry about an ID the broker does not know (UNKNOWN_TOPIC_ID)
	// has no name; one answered at a version before 6 has no ID.
	byName := make(map[string]*kmsg.DeleteTopicsResponseTopic, len(resp.Topics))
	byID := make(map[topicID]*kmsg.DeleteTopicsResponseTopic, len(resp.Topics))
	for i := range resp.Topics {
		a := &resp.Topics[i]
		if a.TopicID != (topicID{}) {
			byID[a.TopicID] = a
		}
		if n := unptr(a.Topic); n != "" {
			byName[n] = a
		}
	}
	for _, c := range calls {
		a, ok := byID[c.in] // never the zero ID: a call by name
		if !ok {
			a, ok = byName[c.topic]
		}
		if !ok {
			c.err = errors.New("the broker's answer does not mention the topic")
			continue
		}
		c.err = kerr.ErrorForCode(a.ErrorCode)
		c.out = unptr(a.ErrorMessage)
	}
}

// answerWrites hands every call of a write batch its topic's answer: the
// error code as its error and the broker's message as its out. A topic the
// broker did not answer for is an error of its own. result reads a
// response entry's topic name, error code and message.
func answerWrites[In, R any](calls []*call[In, string], answers []R, result func(*R) (string, int16, *string)) {
	byName := make(map[string]*R, len(answers))
	for i := range answers {
		if name, _, _ := result(&answers[i]); name != "" {
			byName[name] = &answers[i]
		}
	}
	for _, c := range calls {
		a, ok := byName[c.topic]
		if !ok {
			c.err = errors.New("the broker's answer does not mention the topic")
			continue
		}
		_, code, msg := result(a)
		c.err = kerr.ErrorForCode(code)
		c.out = unptr(msg)
	}
}

func unptr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
