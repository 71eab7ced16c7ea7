package kadm

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestOwnerRegistryLoadsFromASlowBroker: a broker that answers every
// request well within the request timeout, but slowly enough that the
// requests of a full load of the owner registry (Metadata,
// DescribeConfigs, ListOffsets, Fetch, and the client's own metadata
// requests) together take longer than one timeout. A restarted backend
// loads the registry and reads the record, and so does the hourly full
// load after it: a load is bounded per request, not as a whole, so a
// slow broker that answers is not taken for an unreachable one.
//
// The broker is franz-go's kfake cluster in this process: only there can
// its answers be delayed (Cluster.ControlKey, Cluster.SleepControl).
func TestOwnerRegistryLoadsFromASlowBroker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const timeout = 5 * time.Second
	open := func() *Backend { return openOn(t, c, timeout) }
	ctx := context.Background()
	r := drivers.Resource{Name: "slow-registry", Parameters: map[string]string{"partitions": "1"}}
	want := drivers.OwnerRecord{Installation: "i", Namespace: "n", Name: "b", UID: "u"}
	first := open()
	if _, err := first.Ensure(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := first.WriteOwner(ctx, r, &want); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// Every request a load makes is answered after a third of the timeout
	// and more: each alone well within it, a load's together past it.
	for _, k := range []kmsg.Key{kmsg.Metadata, kmsg.DescribeConfigs, kmsg.ListOffsets, kmsg.Fetch} {
		c.ControlKey(k.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			c.SleepControl(func() { time.Sleep(timeout * 9 / 25) })
			return nil, nil, false
		})
	}

	be := open() // the controller restarted
	// The test's own bound: a load of a handful of requests, each within
	// its timeout, ends long before.
	wait, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	read := func(what string) {
		t.Helper()
		got, err := be.ReadOwner(wait, r)
		if err != nil {
			t.Fatalf("%s: want the record read from a slow broker, got %v (unavailable: %v)", what, err, drivers.IsUnavailable(err))
		}
		if got == nil || got.Installation != want.Installation || got.Namespace != want.Namespace || got.Name != want.Name || got.UID != want.UID {
			t.Fatalf("%s: want %+v, got %+v", what, want, got)
		}
	}
	read("after a restart")

	be.owners.mu.Lock()
	be.owners.full = true // the hourly full load (reloadAfter)
	be.owners.mu.Unlock()
	read("at the hourly full load")
}

// TestOwnerRegistryLoadResumes: a full load that fails after it read part
// of the registry keeps what it read, and the next resumes it, not start
// over. The registry here has three partitions, each read by a Fetch of
// its own, and the broker fails every other Fetch: a load that started
// over each time would fail for ever (its first Fetch answered, its
// second not); resumed, every try reads one partition more, and a try per
// partition loads the registry, with the records of every partition.
//
// The broker is franz-go's kfake cluster in this process: only there can
// its answers be made to fail (Cluster.ControlKey).
func TestOwnerRegistryLoadResumes(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	open := func() *Backend { return openOn(t, c, 10*time.Second) }
	ctx := context.Background()
	const partitions = 3
	first := open()
	topic := first.cfg.registryTopic()
	if _, err := first.adm.CreateTopic(ctx, partitions, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, topic); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 12 {
		name := fmt.Sprintf("t%d", i)
		if err := first.WriteOwner(ctx, drivers.Resource{Name: name}, &drivers.OwnerRecord{Installation: "i", Namespace: "n", Name: name, UID: "u" + name}); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	ends, _, err := first.registryEnds(ctx, topic, partitions)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		if ends[p] == 0 {
			t.Fatalf("want records in every registry partition, got end offsets %v", ends)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	fetches := 0
	c.ControlKey(kmsg.Fetch.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		fetches++
		if fetches%2 == 1 {
			return nil, nil, false
		}
		req := kreq.(*kmsg.FetchRequest)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.Version = req.Version
		for _, rt := range req.Topics {
			st := kmsg.NewFetchResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewFetchResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotLeaderForPartition.Code
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})

	be := open() // the controller restarted
	r := drivers.Resource{Name: names[0]}
	var got *drivers.OwnerRecord
	for try := 1; ; try++ {
		got, err = be.ReadOwner(ctx, r)
		if err == nil {
			break
		}
		if try == partitions {
			t.Fatalf("try %d: want the registry loaded, each try resuming the last, got %v", try, err)
		}
	}
	if got == nil || got.UID != "u"+names[0] {
		t.Errorf("%s: want the record of UID u%s, got %+v", names[0], names[0], got)
	}
	// Every partition's records are in the table, the ones read by the
	// tries that failed too: read from memory, without a request.
	for _, name := range names {
		got, err := be.ReadOwner(ctx, drivers.Resource{Name: name, MaxAge: time.Hour})
		if err != nil || got == nil || got.UID != "u"+name {
			t.Errorf("%s: want the record of UID u%s, got %+v, %v", name, name, got, err)
		}
	}
}

// TestResumedLoadDropsWhatTheLogNoLongerHas: a full load read part of a
// partition, failed, and resumes; meanwhile the log's start moved past
// what it read (DeleteRecords, a retention on a registry created by
// hand). The records read before that start are not kept: the log has
// none of them, and a record the table had there counts as lost.
func TestResumedLoadDropsWhatTheLogNoLongerHas(t *testing.T) {
	l := newFullLoad([16]byte{1}, time.Now())
	l.add([]fetched{
		{topic: "gone", entry: ownerEntry{rec: &drivers.OwnerRecord{UID: "a"}, partition: 0, offset: 3}},
		{topic: "kept", entry: ownerEntry{rec: &drivers.OwnerRecord{UID: "b"}, partition: 0, offset: 9}},
		{topic: "other", entry: ownerEntry{rec: &drivers.OwnerRecord{UID: "c"}, partition: 1, offset: 1}},
	})
	l.dropBelow(0, 5)
	for name, want := range map[string]bool{"gone": false, "kept": true, "other": true} {
		_, inRecs := l.recs[name]
		_, inRead := l.read[name]
		if inRecs != want || inRead != want {
			t.Errorf("%s: want kept %v, got in the table %v, read %v", name, want, inRecs, inRead)
		}
	}
}

// openOn opens a backend on the in-process cluster c with requestTimeout
// timeout, closed when the test ends.
func openOn(t *testing.T, c *kfake.Cluster, timeout time.Duration) *Backend {
	t.Helper()
	be, err := New().Open(context.Background(), "kafka", &Config{SeedBrokers: c.ListenAddrs(), RequestTimeout: drivers.Duration{Duration: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return be.(*Backend)
}
