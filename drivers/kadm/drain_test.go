package kadm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

// drainCase is the drain contract (drivertest.DrainContract) on the
// fixture's broker: a topic with records over three partitions; refused are
// a compacted-only topic, the owner registry and Kafka's internal topics.
func (f *fixture) drainCase() drivertest.DrainCase {
	return drivertest.DrainCase{
		Backend:  f.backend,
		Requests: f.counter,
		Units:    5,
		Fills: []drivertest.DrainFill{{
			Name:     "records over partitions",
			Resource: drivers.Resource{Name: "drain-records", Parameters: map[string]string{ParamPartitions: "3", "config.cleanup.policy": "delete"}},
			Fill: func(t testing.TB, r drivers.Resource) drivers.Content {
				n := f.produce(t, r.Name, 30)
				if parts := f.partitionsHolding(t, r.Name); parts < 2 {
					t.Fatalf("fill: want records in several partitions, got %d", parts)
				}
				return drivers.Content{Known: true, Objects: n}
			},
		}},
		Count: func(t testing.TB, r drivers.Resource) int64 {
			start, end := f.offsets(t, r.Name)
			var n int64
			for p, e := range end {
				n += e - start[p]
			}
			return n
		},
		Snapshot: func(t testing.TB, r drivers.Resource) string {
			parts, rf, dyn := f.state(t, r.Name)
			return fmt.Sprintf("%d partitions, replication factor %d, configs %v", parts, rf, dyn)
		},
		WriteRead: func(t testing.TB, r drivers.Resource) {
			if err := f.kgo.ProduceSync(context.Background(), &kgo.Record{Topic: r.Name, Value: []byte("after-drain")}).FirstErr(); err != nil {
				t.Fatalf("produce after the drain: %v", err)
			}
			if got := f.consumeAll(t, r.Name, 1); string(got[0].Value) != "after-drain" {
				t.Fatalf("consume after the drain: want the record written after it, got %q", got[0].Value)
			}
		},
		Refusals: []drivertest.DrainRefusal{
			{Name: "compacted only", Resource: drivers.Resource{Name: "drain-compacted", Parameters: map[string]string{"config.cleanup.policy": "compact"}},
				Setup: func(t testing.TB, r drivers.Resource) {
					if _, err := f.backend.Ensure(context.Background(), r); err != nil {
						t.Fatal(err)
					}
					f.produce(t, r.Name, 3)
				},
				Errs: []string{"topic drain-compacted cannot be drained", `cleanup.policy is "compact"`, "include delete"}},
			{Name: "owner registry", Resource: drivers.Resource{Name: DefaultOwnerRegistryTopic}, Errs: []string{DefaultOwnerRegistryTopic, "owner registry"}},
			{Name: "internal topic", Resource: drivers.Resource{Name: "__consumer_offsets"}, Errs: []string{"__consumer_offsets", "Kafka's internal topics"}},
		},
	}
}

// produce writes n keyed records (spread over the partitions by key) and
// returns n.
func (f *fixture) produce(t testing.TB, topic string, n int) int64 {
	t.Helper()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}
	}
	if err := f.kgo.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	return int64(n)
}

// offsets lists a topic's start and end offsets out of band.
func (f *fixture) offsets(t testing.TB, topic string) (start, end map[int32]int64) {
	t.Helper()
	ctx := context.Background()
	s, err := f.admin.ListStartOffsets(ctx, topic)
	if err != nil || s.Error() != nil {
		t.Fatalf("list start offsets of %s: %v %v", topic, err, s.Error())
	}
	e, err := f.admin.ListEndOffsets(ctx, topic)
	if err != nil || e.Error() != nil {
		t.Fatalf("list end offsets of %s: %v %v", topic, err, e.Error())
	}
	start, end = map[int32]int64{}, map[int32]int64{}
	s.Each(func(o kadm.ListedOffset) { start[o.Partition] = o.Offset })
	e.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	return start, end
}

// partitionsHolding counts a topic's partitions that hold records.
func (f *fixture) partitionsHolding(t testing.TB, topic string) int {
	start, end := f.offsets(t, topic)
	n := 0
	for p, e := range end {
		if e > start[p] {
			n++
		}
	}
	return n
}

// consumeAll reads a topic from its start with a consumer of its own until
// it has n records.
func (f *fixture) consumeAll(t testing.TB, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(f.broker.Addrs...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume %s: want %d records, got %d before %v", topic, n, len(got), err)
		}
		if err := fs.Err(); err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		got = append(got, fs.Records()...)
	}
	return got
}

// TestDrainPolicyViolation: a topic compacted by the broker's default
// (log.cleanup.policy=compact, so the topic has no cleanup.policy of its
// own) is refused by the broker's DeleteRecords with POLICY_VIOLATION, as
// Apache Kafka does; the drain says why, and nothing is deleted. kfake
// does not enforce the policy, so its answer is put in place with
// Cluster.ControlKey, in this process.
func TestDrainPolicyViolation(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker")
	}
	c, b := inProcessBackend(t, New(), kfake.NumBrokers(1), kfake.DefaultNumPartitions(2))
	ctx := context.Background()
	r := drivers.Resource{Name: "compacted-by-default"}
	if _, err := b.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := b.kgo.ProduceSync(ctx, &kgo.Record{Topic: r.Name, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	c.ControlKey(kmsg.DeleteRecords.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.DeleteRecordsRequest)
		resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
		resp.Version = req.Version
		for _, rt := range req.Topics {
			st := kmsg.NewDeleteRecordsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewDeleteRecordsResponseTopicPartition()
				sp.Partition, sp.LowWatermark, sp.ErrorCode = rp.Partition, -1, kerr.PolicyViolation.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	step, err := b.Drain(ctx, r, drivers.DrainLimits{})
	for _, want := range []string{"topic compacted-by-default cannot be drained", "POLICY_VIOLATION", "cleanup.policy does not include delete", "include delete"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Drain: want an error containing %q, got %v", want, err)
		}
	}
	if step.Done || step.Deleted.Objects != 0 || step.Requests < 4 {
		t.Errorf("Drain: want nothing deleted, not done, and its requests counted, got %+v", step)
	}
}
