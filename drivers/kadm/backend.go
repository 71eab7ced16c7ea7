package kadm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"syscall"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// Backend is one Kafka cluster, reached through one long-lived admin client.
type Backend struct {
	name string
	cfg  *Config
	kgo  *kgo.Client
	adm  *kadm.Client
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
// when withConfigs, its dynamic configs.
func (b *Backend) describe(ctx context.Context, topic string, withConfigs bool) (topicState, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		return topicState{}, b.classify(err)
	}
	if len(resp.Topics) != 1 {
		return topicState{}, fmt.Errorf("metadata for %s: broker answered %d topics", topic, len(resp.Topics))
	}
	rt := resp.Topics[0]
	if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return topicState{}, nil
		}
		return topicState{}, fmt.Errorf("metadata for %s: %w", topic, err)
	}
	st := topicState{exists: true, partitions: int32(len(rt.Partitions))}
	for _, p := range rt.Partitions {
		if rf := int16(len(p.Replicas)); rf > st.replicationFactor {
			st.replicationFactor = rf
		}
	}
	if !withConfigs {
		return st, nil
	}
	rcs, err := b.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return topicState{}, b.classify(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return topicState{}, fmt.Errorf("describe configs of %s: %w", topic, err)
	}
	if rc.Err != nil {
		return topicState{}, fmt.Errorf("describe configs of %s: %w %s", topic, rc.Err, rc.ErrMessage)
	}
	st.dynamic = map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			st.dynamic[c.Key] = c.MaybeValue()
		}
	}
	return st, nil
}

func (b *Backend) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.timeout())
}

// Inspect implements drivers.Backend: a topic holds content when any
// partition's end offset is past its start offset. Anything it cannot read
// counts as content.
func (b *Backend) Inspect(ctx context.Context, name string) (drivers.Inspection, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	st, err := b.describe(ctx, name, false)
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	if !st.exists {
		return drivers.Inspection{}, nil
	}
	starts, err := b.adm.ListStartOffsets(ctx, name)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot read start offsets: " + err.Error()}, b.classify(err)
	}
	ends, err := b.adm.ListEndOffsets(ctx, name)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot read end offsets: " + err.Error()}, b.classify(err)
	}
	var records int64
	var first int32 = -1
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(e.Topic, e.Partition)
		if !ok {
			records++ // unknown start: count as content
			return
		}
		if n := e.Offset - s.Offset; n > 0 {
			records += n
			if first < 0 || e.Partition < first {
				first = e.Partition
			}
		}
	})
	if records > 0 {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: fmt.Sprintf("topic %s holds %d records (partition %d and maybe others)", name, records, first)}, nil
	}
	return drivers.Inspection{Exists: true, Detail: fmt.Sprintf("topic %s exists and holds no records", name)}, nil
}

// Ensure implements drivers.Backend.
func (b *Backend) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	want := parseParams(r.Parameters)
	st, err := b.describe(ctx, r.Name, true)
	if err != nil {
		return drivers.EnsureResult{}, err
	}
	if !st.exists {
		configs := make(map[string]*string, len(want.configs))
		for k, v := range want.configs {
			configs[k] = kadm.StringPtr(v)
		}
		resp, err := b.adm.CreateTopic(ctx, want.partitions, want.replicationFactor, configs, r.Name)
		switch {
		case err == nil:
			return drivers.EnsureResult{Created: true, Shortfalls: want.shortfalls(), Changes: []string{fmt.Sprintf("created topic %s (partitions %s, replication factor %s, %d configs)", r.Name, orBroker(int64(want.partitions)), orBroker(int64(want.replicationFactor)), len(configs))}}, nil
		case errors.Is(err, kerr.TopicAlreadyExists):
			// Created concurrently: converge it below.
			if st, err = b.describe(ctx, r.Name, true); err != nil {
				return drivers.EnsureResult{}, err
			}
		default:
			return drivers.EnsureResult{}, b.classify(fmt.Errorf("create topic %s: %w %s", r.Name, err, resp.ErrMessage))
		}
	}
	return b.converge(ctx, r.Name, want, st)
}

// converge brings an existing topic to the parameters. Drift it must not
// repair is returned as a *drivers.DriftError after everything repairable
// has been applied.
func (b *Backend) converge(ctx context.Context, topic string, want params, st topicState) (drivers.EnsureResult, error) {
	res := drivers.EnsureResult{Shortfalls: want.shortfalls()}
	var drift error
	if want.replicationFactor > 0 && st.replicationFactor != want.replicationFactor {
		drift = &drivers.DriftError{Parameter: ParamReplicationFactor, Current: strconv.Itoa(int(st.replicationFactor)), Desired: strconv.Itoa(int(want.replicationFactor)),
			Reason: "Kafka cannot change a topic's replication factor in place; reassign partitions with Kafka's tools, or recreate the topic"}
	}
	if want.partitions > 0 {
		switch {
		case st.partitions < want.partitions:
			resp, err := b.adm.UpdatePartitions(ctx, int(want.partitions), topic)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return res, b.classify(fmt.Errorf("grow partitions of %s to %d: %w", topic, want.partitions, err))
			}
			res.Changes = append(res.Changes, fmt.Sprintf("partitions %d -> %d", st.partitions, want.partitions))
		case st.partitions > want.partitions:
			drift = &drivers.DriftError{Parameter: ParamPartitions, Current: strconv.Itoa(int(st.partitions)), Desired: strconv.Itoa(int(want.partitions)),
				Reason: "Kafka cannot remove partitions; set partitions to at least the current count, or recreate the topic"}
		}
	}
	var alters []kadm.AlterConfig
	for _, k := range sortedKeys(want.configs) {
		v := want.configs[k]
		if cur, ok := st.dynamic[k]; !ok || cur != v {
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
			if ok {
				res.Changes = append(res.Changes, fmt.Sprintf("config %s %q -> %q", k, cur, v))
			} else {
				res.Changes = append(res.Changes, fmt.Sprintf("config %s set to %q", k, v))
			}
		}
	}
	for _, k := range sortedKeys(st.dynamic) {
		if _, ok := operationalConfigs[k]; ok {
			continue // Kafka's tools own it: never reverted
		}
		if _, ok := want.configs[k]; !ok {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			res.Changes = append(res.Changes, fmt.Sprintf("config %s %q removed (not in spec; broker default applies)", k, st.dynamic[k]))
		}
	}
	if len(alters) > 0 {
		resps, err := b.adm.AlterTopicConfigs(ctx, alters, topic)
		if err != nil {
			return res, b.classify(fmt.Errorf("alter configs of %s: %w", topic, err))
		}
		r, err := resps.On(topic, nil)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			return res, fmt.Errorf("alter configs of %s: %w %s", topic, err, r.ErrMessage)
		}
	}
	return res, drift
}

// Delete implements drivers.Backend.
func (b *Backend) Delete(ctx context.Context, name string) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	resp, err := b.adm.DeleteTopic(ctx, name)
	if err == nil || errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil
	}
	return b.classify(fmt.Errorf("delete topic %s: %w %s", name, err, resp.ErrMessage))
}

// Grant implements drivers.Backend: bootstrap and topic, the same for every
// access in v1alpha1.
func (b *Backend) Grant(_ context.Context, a drivers.Access) (drivers.Grant, error) {
	return drivers.Grant{
		Data: map[string][]byte{
			"bootstrap": []byte(b.cfg.bootstrap()),
			"topic":     []byte(a.Resource),
		},
		Scoped: (a.Role == "" || a.Role == "ReadWrite") && len(a.Parameters) == 0,
	}, nil
}

// Revoke implements drivers.Backend; there is no per-access principal in
// v1alpha1.
func (b *Backend) Revoke(context.Context, drivers.Access) error { return nil }

// Close implements drivers.Backend.
func (b *Backend) Close() error {
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

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
