package kadm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestPlanFor is the comparison Ensure and Sweep share: what differs, in
// Ensure's words, and what is drift it will not repair.
func TestPlanFor(t *testing.T) {
	st := func(parts int32, rf int16, dyn map[string]string) topicState {
		return topicState{exists: true, partitions: parts, replicationFactor: rf, dynamic: dyn}
	}
	cases := []struct {
		name    string
		params  map[string]string
		state   topicState
		growTo  int32
		changes []string
		drift   string // DriftError.Parameter, "" for none
	}{
		{name: "in sync", params: map[string]string{"partitions": "3", "config.retention.ms": "1000"},
			state: st(3, 1, map[string]string{"retention.ms": "1000"})},
		{name: "nothing asked, nothing set", params: nil, state: st(7, 1, map[string]string{})},
		{name: "config changed out of band", params: map[string]string{"config.retention.ms": "1000"},
			state: st(1, 1, map[string]string{"retention.ms": "1"}), changes: []string{`config retention.ms "1" -> "1000"`}},
		{name: "config missing", params: map[string]string{"config.retention.ms": "1000"},
			state: st(1, 1, map[string]string{}), changes: []string{`config retention.ms set to "1000"`}},
		{name: "config added out of band", params: nil,
			state: st(1, 1, map[string]string{"cleanup.policy": "compact"}), changes: []string{`config cleanup.policy "compact" removed (not in spec; broker default applies)`}},
		{name: "operational config left alone", params: nil,
			state: st(1, 1, map[string]string{"leader.replication.throttled.replicas": "*"})},
		{name: "operational parameter never applied", params: map[string]string{"config.follower.replication.throttled.replicas": "*"},
			state: st(1, 1, map[string]string{})},
		{name: "partitions to grow", params: map[string]string{"partitions": "4"}, state: st(2, 1, nil), growTo: 4,
			changes: []string{"partitions 2 -> 4"}},
		{name: "partitions grown out of band", params: map[string]string{"partitions": "2"}, state: st(5, 1, nil), drift: ParamPartitions},
		{name: "replication factor differs", params: map[string]string{"replicationFactor": "3"}, state: st(1, 1, nil), drift: ParamReplicationFactor},
		{name: "repairable and unrepairable at once", params: map[string]string{"partitions": "2", "config.retention.ms": "5"},
			state: st(5, 1, map[string]string{"retention.ms": "6"}), changes: []string{`config retention.ms "6" -> "5"`}, drift: ParamPartitions},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := planFor(parseParams(c.params), c.state)
			if p.growTo != c.growTo {
				t.Errorf("growTo: want %d, got %d", c.growTo, p.growTo)
			}
			if strings.Join(p.changes, "|") != strings.Join(c.changes, "|") {
				t.Errorf("changes: want %q, got %q", c.changes, p.changes)
			}
			if len(p.alters) != len(c.changes)-btoi(c.growTo > 0) {
				t.Errorf("want one alter per config change, got %d alters for %q", len(p.alters), p.changes)
			}
			got := ""
			if p.drift != nil {
				got = p.drift.Parameter
			}
			if got != c.drift {
				t.Errorf("drift: want %q, got %q (%v)", c.drift, got, p.drift)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSweepFindsExactlyWhatEnsureRepairs sweeps 1000 topics on the
// request-counting broker: in sync, a sweep is a few requests and reports
// nothing; after out-of-band changes on some, it reports exactly those,
// with the changes Ensure then makes. With the default bounds it is one
// Metadata request (5000 topics) and one DescribeConfigs (a sweep's chunk
// is twice maxBatch: 1000); with a bound of 30, one Metadata per 300
// topics serves five DescribeConfigs chunks of 60, the last group short.
func TestSweepFindsExactlyWhatEnsureRepairs(t *testing.T) {
	for _, c := range []struct {
		maxBatch                  int
		metadata, describeConfigs int64
	}{{0, 1, 1}, {30, 4, 17}} {
		t.Run(fmt.Sprintf("maxBatch %d", c.maxBatch), func(t *testing.T) {
			sweepFindsExactlyWhatEnsureRepairs(t, c.maxBatch, c.metadata, c.describeConfigs)
		})
	}
}

func sweepFindsExactlyWhatEnsureRepairs(t *testing.T, maxBatch int, wantMetadata, wantConfigs int64) {
	const n = 1000
	f := newCountingFixture(t, &Driver{MaxBatch: maxBatch})
	ctx := context.Background()
	rs := make([]drivers.Resource, n)
	for i := range rs {
		rs[i] = drivers.Resource{Name: fmt.Sprintf("sweep.%04d", i), Parameters: map[string]string{
			"partitions": "2", "config.retention.ms": strconv.Itoa(60000 + i)}}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range rs {
		wg.Go(func() { _, errs[i] = f.backend.Ensure(ctx, rs[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", rs[i].Name, err)
		}
	}
	_, base := f.requests(t, nil)

	v, err := f.backend.Sweep(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	delta, base := f.requests(t, base)
	// A connection the client (re)opens starts with ApiVersions; on a
	// loaded machine an idle connection may have been closed meanwhile.
	// That is connection setup, not the sweep's requests.
	delete(delta, "ApiVersions")
	for i := range v {
		if v[i].Drifted() || v[i].Drift != nil || v[i].Err != nil {
			t.Errorf("%s in sync: want an empty verdict, got %+v", rs[i].Name, v[i])
		}
	}
	// ⌈1000/(10×maxBatch)⌉ + ⌈1000/(2×maxBatch)⌉, and nothing else.
	if delta["Metadata"] != wantMetadata || delta["DescribeConfigs"] != wantConfigs || total(delta, "Metadata", "DescribeConfigs") != total(delta, keys(delta)...) {
		t.Errorf("sweep of %d topics in sync: want %d Metadata + %d DescribeConfigs requests, got %v", n, wantMetadata, wantConfigs, delta)
	}
	t.Logf("sweep of %d topics in sync: %v", n, delta)

	// Out of band: 100 configs changed, 10 partition counts grown, 5
	// topics deleted.
	var alters []string
	for i := 0; i < 100; i++ {
		alters = append(alters, rs[i*10].Name)
	}
	if _, err := f.admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, alters...); err != nil {
		t.Fatal(err)
	}
	grown := []string{rs[1].Name, rs[3].Name, rs[5].Name, rs[7].Name, rs[9].Name, rs[11].Name, rs[13].Name, rs[15].Name, rs[17].Name, rs[19].Name}
	if _, err := f.admin.UpdatePartitions(ctx, 4, grown...); err != nil {
		t.Fatal(err)
	}
	deleted := []string{rs[2].Name, rs[4].Name, rs[6].Name, rs[8].Name, rs[12].Name}
	if _, err := f.admin.DeleteTopics(ctx, deleted...); err != nil {
		t.Fatal(err)
	}
	_, base = f.requests(t, base)
	v, err = f.backend.Sweep(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	delta, _ = f.requests(t, base)
	delete(delta, "ApiVersions")
	if total(delta, keys(delta)...) > wantMetadata+wantConfigs {
		t.Errorf("sweep after drift: want at most %d requests, got %v", wantMetadata+wantConfigs, delta)
	}
	isAltered, isGrown, isDeleted := set(alters), set(grown), set(deleted)
	for i, r := range rs {
		got := v[i]
		switch {
		case isDeleted[r.Name]:
			if want := "topic " + r.Name + " does not exist"; strings.Join(got.Changes, "|") != want || got.Drift != nil {
				t.Errorf("%s deleted: want %q, got %+v", r.Name, want, got)
			}
		case isGrown[r.Name]:
			if got.Drifted() || got.Drift == nil || got.Drift.Parameter != ParamPartitions || got.Drift.Current != "4" {
				t.Errorf("%s grown to 4: want partitions drift only, got %+v", r.Name, got)
			}
		case isAltered[r.Name]:
			res, err := f.backend.Ensure(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Changes, "|") != strings.Join(res.Changes, "|") || len(res.Changes) != 1 {
				t.Errorf("%s altered: want the sweep to name Ensure's one change %q, got %q", r.Name, res.Changes, got.Changes)
			}
		case got.Drifted() || got.Drift != nil || got.Err != nil:
			t.Errorf("%s untouched: want an empty verdict, got %+v", r.Name, got)
		}
	}
}

// TestSweepOfUnreachableBrokerFails: nothing is judged when the broker
// cannot be reached, and the error says so.
func TestSweepOfUnreachableBrokerFails(t *testing.T) {
	f := newCountingFixture(t, &Driver{})
	if err := f.broker.Stop(); err != nil {
		t.Fatal(err)
	}
	v, err := f.backend.Sweep(context.Background(), []drivers.Resource{{Name: "a"}, {Name: "b"}})
	if !drivers.IsUnavailable(err) || v != nil {
		t.Fatalf("want an UnavailableError and no verdicts, got %v, %v", v, err)
	}
}

func keys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func set(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}
