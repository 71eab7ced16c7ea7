package kadm

import (
	"context"
	"fmt"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// produceN writes n records to topic, spread over its partitions.
func produceN(t *testing.T, f *fixture, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte(fmt.Sprintf("record %d of a usage test", i))})
	}
	if err := f.kgo.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestUsage: a topic's usage is its log bytes (one replica per partition,
// on a cluster of three brokers), its partitions and the records it was
// written; an empty topic holds nothing; a missing topic is not Known.
func TestUsage(t *testing.T) {
	f := newFixture(t, kafka.Options{Brokers: 3}, func(c *Config) { c.RequestTimeout = drivers.Duration{Duration: 2 * time.Second} })
	f.ensure(t, "measured", map[string]string{"partitions": "3", "replicationFactor": "3"})
	f.ensure(t, "empty", map[string]string{"partitions": "2"})
	produceN(t, f, "measured", 30)
	before := time.Now()
	got, err := f.backend.Usage(context.Background(), []drivers.Resource{{Name: "measured"}, {Name: "missing"}, {Name: "empty"}, {Name: "measured"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("want one usage per resource (4), got %d", len(got))
	}
	m := got[0]
	if !m.Known || m.Partitions != 3 || m.EndOffsets != 30 || m.Bytes <= 0 || m.Source != "DescribeLogDirs" || m.MeasuredAt.Before(before) {
		t.Errorf("measured: want Known, 3 partitions, 30 end offsets, bytes > 0, source DescribeLogDirs, measured now; got %+v", m)
	}
	// kfake reports every partition on each of its three brokers: the sum
	// of every replica is three times what one holds.
	all, err := f.admin.DescribeAllLogDirs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var replicas int64
	all.Each(func(d kadm.DescribedLogDir) {
		for _, p := range d.Topics["measured"] {
			replicas += p.Size
		}
	})
	if replicas != 3*m.Bytes {
		t.Errorf("measured: want the bytes of one replica per partition (a third of all replicas' %d), got %d", replicas, m.Bytes)
	}
	if got[1] != (drivers.Usage{}) {
		t.Errorf("missing: want Known false and nothing else, got %+v", got[1])
	}
	if e := got[2]; !e.Known || e.Partitions != 2 || e.EndOffsets != 0 || e.Bytes != 0 {
		t.Errorf("empty: want Known, 2 partitions, nothing written, got %+v", e)
	}
	if got[3] != got[0] {
		t.Errorf("a topic named twice: want the same usage, got %+v and %+v", got[0], got[3])
	}
	produceN(t, f, "measured", 3)
	again, err := f.backend.Usage(context.Background(), []drivers.Resource{{Name: "measured"}})
	if err != nil {
		t.Fatal(err)
	}
	if again[0].EndOffsets != 33 || again[0].Bytes <= m.Bytes {
		t.Errorf("after 3 more records: want 33 end offsets and more bytes than %d, got %+v", m.Bytes, again[0])
	}
	if err := f.broker.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := f.backend.Usage(context.Background(), []drivers.Resource{{Name: "measured"}}); !drivers.IsUnavailable(err) || got != nil {
		t.Errorf("broker stopped: want an unavailable error and no usage, got %v, %v", got, err)
	}
}

// TestUsageRequestsDoNotGrowWithTopics: measuring 50 topics costs no more
// requests than measuring 2 may: one Metadata, and kgo's own (brokers only
// before every DescribeLogDirs to all brokers; the partition leaders'
// before ListOffsets once its cache of MetadataMinAge, 5 s, has expired,
// as it may between two calls on a loaded machine), one DescribeLogDirs
// per broker and one ListOffsets per partition leader.
func TestUsageRequestsDoNotGrowWithTopics(t *testing.T) {
	f := newFixture(t, kafka.Options{Brokers: 3}, nil)
	var rs []drivers.Resource
	for i := range 50 {
		name := fmt.Sprintf("usage-%02d", i)
		f.ensure(t, name, map[string]string{"partitions": "3"})
		rs = append(rs, drivers.Resource{Name: name})
	}
	measure := func(rs []drivers.Resource) map[string]int {
		t.Helper()
		if _, err := f.backend.Usage(context.Background(), rs); err != nil { // warm kgo's metadata
			t.Fatal(err)
		}
		f.counter.Reset()
		got, err := f.backend.Usage(context.Background(), rs)
		if err != nil {
			t.Fatal(err)
		}
		for i, u := range got {
			if !u.Known || u.Partitions != 3 {
				t.Fatalf("%s: want Known with 3 partitions, got %+v", rs[i].Name, u)
			}
		}
		return f.counter.Ops()
	}
	for _, n := range []int{2, 50} {
		ops := measure(rs[:n])
		t.Logf("%d topics: %v", n, ops)
		// Two topics of three partitions may have their leaders on two
		// brokers only: ListOffsets goes to the leaders.
		if ops["Metadata"] > 3 || ops["DescribeLogDirs"] != 3 || ops["ListOffsets"] > 3 || len(ops) != 3 {
			t.Errorf("%d topics on 3 brokers: want at most 3 Metadata (the driver's, and kgo's for the brokers and the partition leaders), 3 DescribeLogDirs, at most 3 ListOffsets and nothing else, got %v", n, ops)
		}
	}
}

// TestFootprint: partitions (unbounded when the broker decides) and, per
// partition on disk, retention.bytes plus the active segment, plus the
// max.message.bytes a topic sets (Redpanda appends one batch past
// segment.bytes); unbounded without either, with retention -1, or when
// the topic is compacted only; and what holds disk uncounted named for
// refusal.
func TestFootprint(t *testing.T) {
	const mi = 1 << 20
	seg := func(kv ...string) map[string]string {
		m := map[string]string{"config.segment.bytes": "1048576"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		params map[string]string
		want   drivers.Footprint
	}{
		{name: "nothing set", params: nil, want: drivers.Footprint{Partitions: -1, DiskBytes: -1, DiskUnboundedBy: "config.retention.bytes"}},
		{name: "partitions only", params: map[string]string{"partitions": "12"}, want: drivers.Footprint{Partitions: 12, DiskBytes: -1, DiskUnboundedBy: "config.retention.bytes"}},
		{name: "retention without segment.bytes: the broker's 1 GiB segments", params: map[string]string{"partitions": "6", "config.retention.bytes": "1"}, want: drivers.Footprint{Partitions: 6, DiskBytes: -1, DiskUnboundedBy: "config.segment.bytes"}},
		{name: "retention and a segment per partition", params: seg("partitions", "6", "config.retention.bytes", "1073741824"), want: drivers.Footprint{Partitions: 6, DiskBytes: 6*(1<<30) + 6*mi}},
		{name: "retention 1 still counts the segments", params: seg("partitions", "10", "config.retention.bytes", "1", "config.preallocate", "true"), want: drivers.Footprint{Partitions: 10, DiskBytes: 10 * (mi + 1)}},
		{name: "broker's partitions", params: seg("config.retention.bytes", "1000"), want: drivers.Footprint{Partitions: -1, DiskBytes: -1, DiskUnboundedBy: "partitions"}},
		{name: "retention bytes -1", params: seg("partitions", "3", "config.retention.bytes", "-1"), want: drivers.Footprint{Partitions: 3, DiskBytes: -1, DiskUnboundedBy: "config.retention.bytes"}},
		{name: "retention bytes 0", params: seg("partitions", "3", "config.retention.bytes", "0"), want: drivers.Footprint{Partitions: 3, DiskBytes: 3 * mi}},
		{name: "max.message.bytes set: one batch more per partition (Redpanda appends it past segment.bytes)", params: seg("partitions", "3", "config.retention.bytes", "0", "config.max.message.bytes", "104857600"), want: drivers.Footprint{Partitions: 3, DiskBytes: 3 * (mi + 100*mi)}},
		{name: "max.message.bytes not a number", params: seg("partitions", "3", "config.retention.bytes", "0", "config.max.message.bytes", "x"), want: drivers.Footprint{Partitions: 3, DiskBytes: -1, DiskUnboundedBy: "config.max.message.bytes"}},
		{name: "max.message.bytes saturates", params: seg("partitions", "2", "config.retention.bytes", "9223372036854775000", "config.max.message.bytes", "2147483647"), want: drivers.Footprint{Partitions: 2, DiskBytes: math.MaxInt64}},
		{name: "compacted only", params: seg("partitions", "3", "config.retention.bytes", "1000", "config.cleanup.policy", "compact"), want: drivers.Footprint{Partitions: 3, DiskBytes: -1, DiskUnboundedBy: "config.retention.bytes"}},
		{name: "compacted and deleted", params: seg("partitions", "3", "config.retention.bytes", "1000", "config.cleanup.policy", "compact,delete"), want: drivers.Footprint{Partitions: 3, DiskBytes: 3 * (mi + 1000)}},
		{name: "overflow saturates", params: seg("partitions", "1000", "config.retention.bytes", "9223372036854775807"), want: drivers.Footprint{Partitions: 1000, DiskBytes: math.MaxInt64}},
		{name: "retention plus segment overflow saturates", params: map[string]string{"partitions": "1", "config.retention.bytes": "9223372036854775807", "config.segment.bytes": "9223372036854775807"}, want: drivers.Footprint{Partitions: 1, DiskBytes: math.MaxInt64}},
		{name: "not a number", params: seg("config.retention.bytes", "1GB"), want: drivers.Footprint{Partitions: -1, DiskBytes: -1, DiskUnboundedBy: "config.retention.bytes"}},
		{name: "deleted segments kept for an hour", params: seg("partitions", "1", "config.retention.bytes", "1", "config.file.delete.delay.ms", "3600000"),
			want: drivers.Footprint{Partitions: 1, DiskBytes: mi + 1, DiskRefused: map[string]string{"config.file.delete.delay.ms": "x"}}},
		{name: "index files of a gigabyte", params: seg("partitions", "1", "config.retention.bytes", "1", "config.segment.index.bytes", "1073741824"),
			want: drivers.Footprint{Partitions: 1, DiskBytes: mi + 1, DiskRefused: map[string]string{"config.segment.index.bytes": "x"}}},
		{name: "Kafka's defaults are not refused", params: seg("partitions", "1", "config.retention.bytes", "1", "config.segment.index.bytes", "10485760", "config.file.delete.delay.ms", "60000"),
			want: drivers.Footprint{Partitions: 1, DiskBytes: mi + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := New().Footprint(&Config{}, tc.params)
			if got.Partitions != tc.want.Partitions || got.DiskBytes != tc.want.DiskBytes || got.DiskUnboundedBy != tc.want.DiskUnboundedBy || got.QuotaBytes != 0 {
				t.Errorf("want %+v, got %+v", tc.want, got)
			}
			if k := keysOnly(got.DiskRefused); !maps.Equal(k, keysOnly(tc.want.DiskRefused)) {
				t.Errorf("want refused %v, got %v", tc.want.DiskRefused, got.DiskRefused)
			}
		})
	}
}

func keysOnly(m map[string]string) map[string]string {
	out := map[string]string{}
	for k := range m {
		out[k] = "x"
	}
	return out
}
