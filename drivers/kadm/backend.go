package kadm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// Backend is one Kafka cluster, reached through one long-lived admin client.
// Concurrent calls are coalesced into requests for many topics (see
// coalesce.go).
type Backend struct {
	name string
	cfg  *Config
	kgo  *kgo.Client
	adm  *kadm.Client

	// stop ends the batchers' requests when the backend is closed.
	stop       context.CancelFunc
	metadata   *batcher[struct{}, topicState]
	configs    *batcher[struct{}, map[string]string]
	offsets    *batcher[int32, topicOffsets]
	creates    *batcher[params, string]
	partitions *batcher[int32, string]
	alters     *batcher[[]kadm.AlterConfig, string]
	deletes    *batcher[struct{}, string]
	// observed is what the backend last saw of each topic (observed.go).
	observed *observations
}

// newBackend wires the batchers; linger and maxBatch bound the latency a
// call can gain and the topics in one request.
func newBackend(name string, cfg *Config, cl *kgo.Client, linger time.Duration, maxBatch int) *Backend {
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(cfg.timeout().Milliseconds()))
	base, stop := context.WithCancel(context.Background())
	b := &Backend{name: name, cfg: cfg, kgo: cl, adm: adm, stop: stop, observed: newObservations()}
	t := cfg.timeout()
	b.metadata = newBatcher(base, true, linger, maxBatch, t, b.execMetadata)
	b.configs = newBatcher(base, true, linger, maxBatch, t, b.execConfigs)
	b.offsets = newBatcher(base, true, linger, maxBatch, t, b.execOffsets)
	b.creates = newBatcher(base, false, linger, maxBatch, t, b.execCreates)
	b.partitions = newBatcher(base, false, linger, maxBatch, t, b.execPartitions)
	b.alters = newBatcher(base, false, linger, maxBatch, t, b.execAlters)
	b.deletes = newBatcher(base, false, linger, maxBatch, t, b.execDeletes)
	return b
}

// topicState is what the broker has for a topic.
type topicState struct {
	exists            bool
	partitions        int32
	replicationFactor int16
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
		st := topicState{exists: true, partitions: int32(len(rt.Partitions))}
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
func (b *Backend) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	name := r.Name
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	st, err := b.describe(ctx, name, false)
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	if !st.exists {
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

// execOffsets lists the start and end offsets of every partition of many
// topics: one ListOffsets request per partition leader for each.
func (b *Backend) execOffsets(ctx context.Context, calls []*call[int32, topicOffsets]) {
	type span struct{ start, end map[int32]int64 }
	got := make(map[string]*span, len(calls))
	errs := make(map[string]error)
	list := func(timestamp int64, which func(*span) map[int32]int64, what string) {
		req := kmsg.NewPtrListOffsetsRequest()
		for _, c := range calls {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = c.topic
			for p := int32(0); p < c.in; p++ {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition = p
				rp.Timestamp = timestamp
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		for _, sh := range b.kgo.RequestSharded(ctx, req) {
			if sh.Err != nil {
				for _, t := range sh.Req.(*kmsg.ListOffsetsRequest).Topics {
					if errs[t.Topic] == nil {
						errs[t.Topic] = fmt.Errorf("list %s offsets of %s: %w", what, t.Topic, sh.Err)
					}
				}
				continue
			}
			for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
				sp := got[t.Topic]
				if sp == nil {
					sp = &span{start: map[int32]int64{}, end: map[int32]int64{}}
					got[t.Topic] = sp
				}
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						if errs[t.Topic] == nil {
							errs[t.Topic] = fmt.Errorf("list %s offsets of %s partition %d: %w", what, t.Topic, p.Partition, err)
						}
						continue
					}
					which(sp)[p.Partition] = p.Offset
				}
			}
		}
	}
	list(-2, func(s *span) map[int32]int64 { return s.start }, "start")
	list(-1, func(s *span) map[int32]int64 { return s.end }, "end")
	for _, c := range calls {
		if err := errs[c.topic]; err != nil {
			c.err = err
			continue
		}
		out := topicOffsets{first: -1}
		sp := got[c.topic]
		for p := int32(0); p < c.in; p++ {
			var s, e int64
			var okS, okE bool
			if sp != nil {
				s, okS = sp.start[p]
				e, okE = sp.end[p]
			}
			switch {
			case !okS || !okE:
				out.records++ // unknown: count as content
				if out.first < 0 {
					out.first = p
				}
			case e > s:
				out.records += e - s
				if out.first < 0 {
					out.first = p
				}
			}
		}
		c.out = out
	}
}

// Ensure implements drivers.Backend. With r.MaxAge it may act on a recent
// observation instead of reading the topic (observed.go).
func (b *Backend) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	want := parseParams(r.Parameters)
	st, seen := b.recent(ctx, r)
	if seen && st.exists {
		if p := planFor(want, st); p.empty() {
			return drivers.EnsureResult{Shortfalls: want.shortfalls()}, nil
		}
		seen = false // something to write: read it first
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
	if !st.exists {
		at := b.observed.now()
		msg, err := b.creates.do(ctx, r.Name, want)
		switch {
		case err == nil:
			b.observed.put(r.Name, created(want), at)
			return drivers.EnsureResult{Created: true, Shortfalls: want.shortfalls(), Changes: []string{fmt.Sprintf("created topic %s (partitions %s, replication factor %s, %d configs)", r.Name, orBroker(int64(want.partitions)), orBroker(int64(want.replicationFactor)), len(want.configs))}}, nil
		case errors.Is(err, kerr.TopicAlreadyExists):
			// Created concurrently: converge it below.
			if st, err = b.describe(ctx, r.Name, true); err != nil {
				return drivers.EnsureResult{}, err
			}
		default:
			// The create's outcome may be unknown (no answer before the
			// deadline: a paused broker may still carry it out), so what
			// was seen before it no longer stands: the next pass reads the
			// topic instead of creating it again.
			b.observed.forget(r.Name)
			return drivers.EnsureResult{}, b.classify(fmt.Errorf("create topic %s: %w %s", r.Name, err, msg))
		}
	}
	return b.converge(ctx, r.Name, want, st, r.DryRun)
}

// execCreates creates many topics, each with its own parameters, in one
// CreateTopics request. A call's out is the broker's error message.
func (b *Backend) execCreates(ctx context.Context, calls []*call[params, string]) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(b.cfg.timeout().Milliseconds())
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
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	answerWrites(calls, resp.Topics, func(r *kmsg.CreateTopicsResponseTopic) (string, int16, *string) {
		return r.Topic, r.ErrorCode, r.ErrorMessage
	})
}

// converge brings an existing topic to the parameters. Drift it must not
// repair is returned as a *drivers.DriftError after everything repairable
// has been applied. What to write is decided by planFor, which Sweep uses
// too. With dryRun it only compares: every write is skipped, and Changes
// lists the writes it would have made.
func (b *Backend) converge(ctx context.Context, topic string, want params, st topicState, dryRun bool) (drivers.EnsureResult, error) {
	res := drivers.EnsureResult{Shortfalls: want.shortfalls()}
	p := planFor(want, st)
	at := b.observed.now()
	if p.growTo > 0 && !dryRun {
		msg, err := b.partitions.do(ctx, topic, p.growTo)
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
	if !dryRun && (p.growTo > 0 || len(p.alters) > 0) {
		b.observed.put(topic, applied(st, p), at)
	}
	if p.drift != nil {
		return res, p.drift
	}
	return res, nil
}

// plan is what Ensure does to an existing topic to bring it to its
// parameters.
type plan struct {
	// growTo is the partition count to grow to; 0: none.
	growTo int32
	// alters are the config changes, in one IncrementalAlterConfigs.
	alters []kadm.AlterConfig
	// changes describes every write, one line each (EnsureResult.Changes).
	changes []string
	// drift is what Ensure reports and does not repair.
	drift *drivers.DriftError
}

// empty reports whether the plan has nothing to write or report.
func (p plan) empty() bool { return p.growTo == 0 && len(p.alters) == 0 && p.drift == nil }

// created is the state of a topic just created with want: what the request
// set. A broker default (partitions or replication factor -1) is unknown
// (0); planFor compares those only when the parameters set them, and a
// plan that would change them reads the topic first.
func created(want params) topicState {
	return topicState{exists: true, partitions: max(want.partitions, 0), replicationFactor: max(want.replicationFactor, 0), dynamic: want.configs}
}

// planFor compares a topic's state with the parameters. It is the one place
// where desired and actual state are compared: Ensure writes what it plans,
// and Sweep reports a topic as drifted exactly when Ensure would write.
func planFor(want params, st topicState) plan {
	var p plan
	if want.replicationFactor > 0 && st.replicationFactor != want.replicationFactor {
		p.drift = &drivers.DriftError{Parameter: ParamReplicationFactor, Current: strconv.Itoa(int(st.replicationFactor)), Desired: strconv.Itoa(int(want.replicationFactor)),
			Reason: "Kafka cannot change a topic's replication factor in place; reassign partitions with Kafka's tools, or recreate the topic"}
	}
	if want.partitions > 0 {
		switch {
		case st.partitions < want.partitions:
			p.growTo = want.partitions
			p.changes = append(p.changes, fmt.Sprintf("partitions %d -> %d", st.partitions, want.partitions))
		case st.partitions > want.partitions:
			p.drift = &drivers.DriftError{Parameter: ParamPartitions, Current: strconv.Itoa(int(st.partitions)), Desired: strconv.Itoa(int(want.partitions)),
				Reason: "Kafka cannot remove partitions; set partitions to at least the current count, or recreate the topic"}
		}
	}
	for _, k := range sortedKeys(want.configs) {
		v := want.configs[k]
		if cur, ok := st.dynamic[k]; !ok || cur != v {
			p.alters = append(p.alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
			if ok {
				p.changes = append(p.changes, fmt.Sprintf("config %s %q -> %q", k, cur, v))
			} else {
				p.changes = append(p.changes, fmt.Sprintf("config %s set to %q", k, v))
			}
		}
	}
	for _, k := range sortedKeys(st.dynamic) {
		if _, ok := operationalConfigs[k]; ok {
			continue // Kafka's tools own it: never reverted
		}
		if _, ok := want.configs[k]; !ok {
			p.alters = append(p.alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			p.changes = append(p.changes, fmt.Sprintf("config %s %q removed (not in spec; broker default applies)", k, st.dynamic[k]))
		}
	}
	return p
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

// Delete implements drivers.Backend.
func (b *Backend) Delete(ctx context.Context, r drivers.Resource) error {
	name := r.Name
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	at := b.observed.now()
	msg, err := b.deletes.do(ctx, name, struct{}{})
	if err == nil || errors.Is(err, kerr.UnknownTopicOrPartition) {
		b.observed.put(name, topicState{}, at)
		return nil
	}
	b.observed.forget(name)
	return b.classify(fmt.Errorf("delete topic %s: %w %s", name, err, msg))
}

// execDeletes deletes many topics in one DeleteTopics request.
func (b *Backend) execDeletes(ctx context.Context, calls []*call[struct{}, string]) {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = int32(b.cfg.timeout().Milliseconds())
	for _, c := range calls {
		req.TopicNames = append(req.TopicNames, c.topic)
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(c.topic)
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		failRequest(b, calls, err)
		return
	}
	answerWrites(calls, resp.Topics, func(r *kmsg.DeleteTopicsResponseTopic) (string, int16, *string) {
		return unptr(r.Topic), r.ErrorCode, r.ErrorMessage
	})
}

// Optional Secret keys of a kadm access (declared in secretKeys, schema.go),
// named after the Kafka client properties consumers already set
// (librdkafka's names where Java's differ), so a Secret maps onto a client
// config key-for-key. Added in driver 0.2.0, additively: a plaintext
// backend's Secret is unchanged.
const (
	// SecretSecurityProtocol is Kafka's security.protocol: SSL, SASL_PLAINTEXT
	// or SASL_SSL. Absent for a plaintext backend (Kafka's default,
	// PLAINTEXT).
	SecretSecurityProtocol = "security.protocol"
	// SecretSSLCAPEM is the PEM CA certificates to trust (librdkafka's
	// ssl.ca.pem; Java: ssl.truststore.type=PEM with
	// ssl.truststore.certificates). Present when the backend has tls.ca or
	// tls.caFile.
	SecretSSLCAPEM = "ssl.ca.pem"
	// SecretSASLMechanism is Kafka's sasl.mechanism: PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512. Present when the backend uses SASL.
	SecretSASLMechanism = "sasl.mechanism"
	// SecretSASLUsername and SecretSASLPassword are the backend's own SASL
	// credentials (librdkafka's names), present only with
	// shareCredentials: true.
	SecretSASLUsername = "sasl.username"
	// SecretSASLPassword is the password for SecretSASLUsername.
	SecretSASLPassword = "sasl.password"
)

// securityProtocol is Kafka's security.protocol for the backend's
// connection, "" for plaintext.
func (c *Config) securityProtocol() string {
	switch {
	case c.TLS != nil && c.SASL != nil:
		return "SASL_SSL"
	case c.TLS != nil:
		return "SSL"
	case c.SASL != nil:
		return "SASL_PLAINTEXT"
	}
	return ""
}

// caPEM is the backend's configured CA, nil when it trusts the system roots.
// A caFile is read on every call, so a rotated file reaches new Secrets.
func (c *Config) caPEM() ([]byte, error) {
	switch {
	case c.TLS == nil:
		return nil, nil
	case c.TLS.CAFile != "":
		b, err := os.ReadFile(c.path(c.TLS.CAFile))
		if err != nil {
			return nil, fmt.Errorf("tls.caFile: %w", err)
		}
		return b, nil
	case c.TLS.CA != "":
		return []byte(c.TLS.CA), nil
	}
	return nil, nil
}

// Grant implements drivers.Backend: what a consumer needs to connect as the
// backend does, the same for every access in v1alpha1 (see secretKeys).
// The TLS client certificate and key are never written, and tls.serverName
// is not either: consumers verify the bootstrap address they are given.
// Shared SASL credentials are not scoped to the access, so they make the
// grant unscoped (ScopingNotImplemented).
func (b *Backend) Grant(_ context.Context, a drivers.Access) (drivers.Grant, error) {
	c := b.cfg
	data := map[string][]byte{
		SecretBootstrap: []byte(c.bootstrap()),
		SecretTopic:     []byte(a.Resource),
	}
	if p := c.securityProtocol(); p != "" {
		data[SecretSecurityProtocol] = []byte(p)
	}
	ca, err := c.caPEM()
	if err != nil {
		return drivers.Grant{}, fmt.Errorf("kadm: backend %s: %w", b.name, err)
	}
	if len(ca) > 0 {
		data[SecretSSLCAPEM] = ca
	}
	shared := false
	if s := c.SASL; s != nil {
		data[SecretSASLMechanism] = []byte(s.Mechanism)
		if c.ShareCredentials {
			data[SecretSASLUsername] = []byte(s.Username)
			data[SecretSASLPassword] = []byte(s.Password)
			shared = true
		}
	}
	return drivers.Grant{
		Data:   data,
		Scoped: !shared && (a.Role == "" || a.Role == "ReadWrite") && len(a.Parameters) == 0,
	}, nil
}

// Revoke implements drivers.Backend; there is no per-access principal in
// v1alpha1.
func (b *Backend) Revoke(context.Context, drivers.Access) error { return nil }

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
	return err
}

func orBroker(n int64) string {
	if n < 0 {
		return "broker default"
	}
	return strconv.FormatInt(n, 10)
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
