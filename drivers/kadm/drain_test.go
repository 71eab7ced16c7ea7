package kadm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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
