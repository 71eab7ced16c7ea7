package kadm

import (
	"context"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestEnsureActsOnRecentObservationsOnly follows a controller's passes over
// 200 topics with MaxAge set, counting what the real broker receives:
// provisioning reads each topic once (Inspect) and creates it; the passes
// after it, while nothing needs writing, send nothing; a topic seen
// differing is read again before it is written; and MaxAge 0, expiry, a
// parameter change, a dry run and an outage all make Ensure read again.
func TestEnsureActsOnRecentObservationsOnly(t *testing.T) {
	const n = 200
	f := newCountingFixture(t, &Driver{})
	ctx := context.Background()
	rs := make([]drivers.Resource, n)
	for i := range rs {
		rs[i] = drivers.Resource{Name: fmt.Sprintf("obs.%03d", i), MaxAge: time.Minute,
			Parameters: map[string]string{"partitions": "2", "config.retention.ms": strconv.Itoa(60000 + i)}}
	}
	if _, err := f.backend.Inspect(ctx, drivers.Resource{Name: "warm-up"}); err != nil {
		t.Fatal(err)
	}
	_, base := f.requests(t, nil)
	all := func(fn func(i int) error) {
		t.Helper()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range rs {
			wg.Go(func() { errs[i] = fn(i) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: %v", rs[i].Name, err)
			}
		}
	}
	quiet := func(d map[string]int64) map[string]int64 {
		delete(d, "ApiVersions") // a reopened idle connection, not a request of ours
		return d
	}

	// Provisioning pass: Inspect reads, Ensure creates without reading again.
	all(func(i int) error {
		in, err := f.backend.Inspect(ctx, rs[i])
		if err == nil && in.Exists {
			err = fmt.Errorf("inspect before create: want missing, got %+v", in)
		}
		return err
	})
	_, base = f.requests(t, base)
	all(func(i int) error {
		res, err := f.backend.Ensure(ctx, rs[i])
		if err == nil && !res.Created {
			err = fmt.Errorf("want Created, got %+v", res)
		}
		return err
	})
	delta, base := f.requests(t, base)
	quiet(delta)
	if delta["CreateTopics"] == 0 || total(delta, keys(delta)...) != delta["CreateTopics"] {
		t.Errorf("Ensure of %d topics just seen missing: want CreateTopics requests only, got %v", n, delta)
	}

	// Later passes: nothing to write, nothing sent.
	all(func(i int) error {
		res, err := f.backend.Ensure(ctx, rs[i])
		if err == nil && (res.Created || len(res.Changes) > 0) {
			err = fmt.Errorf("want in sync, got %+v", res)
		}
		return err
	})
	delta, base = f.requests(t, base)
	if quiet(delta); len(delta) > 0 {
		t.Errorf("Ensure of %d topics just created, nothing to change: want no request, got %v", n, delta)
	}
	got := f.brokerTopics(t, names(rs))
	_, base = f.requests(t, base) // the independent client's
	for i, r := range rs {
		if st := got[r.Name]; st.partitions != 2 || st.dynamic["retention.ms"] != strconv.Itoa(60000+i) {
			t.Errorf("%s on the broker: want 2 partitions and retention.ms %d, got %+v", r.Name, 60000+i, st)
		}
	}

	// Changed out of band: within MaxAge and without a sweep, a pass
	// trusts what it saw (the sweep bounds how long drift goes unseen); a
	// sweep sees the change, and the next Ensure reads again and repairs.
	drifted := rs[0].Name
	if _, err := f.admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, drifted); err != nil {
		t.Fatal(err)
	}
	_, base = f.requests(t, base)
	if res, err := f.backend.Ensure(ctx, rs[0]); err != nil || len(res.Changes) > 0 {
		t.Errorf("Ensure within MaxAge of an in-sync observation: want no change, got %+v, %v", res, err)
	}
	if _, err := f.backend.Sweep(ctx, rs[:1]); err != nil {
		t.Fatal(err)
	}
	_, base = f.requests(t, base)
	res, err := f.backend.Ensure(ctx, rs[0])
	if err != nil || len(res.Changes) != 1 {
		t.Errorf("Ensure after a sweep saw the change: want it repaired, got %+v, %v", res, err)
	}
	delta, base = f.requests(t, base)
	quiet(delta)
	if delta["Metadata"] != 1 || delta["DescribeConfigs"] != 1 || delta["IncrementalAlterConfigs"] != 1 {
		t.Errorf("repair of a topic seen differing: want it read again (1 Metadata, 1 DescribeConfigs) and altered once, got %v", delta)
	}
	if st := f.brokerTopics(t, []string{drifted})[drifted]; st.dynamic["retention.ms"] != "60000" {
		t.Errorf("%s after the repair: want retention.ms 60000, got %+v", drifted, st)
	}
	_, base = f.requests(t, base)

	// Each of these reads the topic again.
	changed := rs[1]
	changed.Parameters = map[string]string{"partitions": "3", "config.retention.ms": "60001"}
	dry := rs[2]
	dry.DryRun = true
	for _, c := range []struct {
		what   string
		r      drivers.Resource
		setup  func()
		verify func()
	}{
		{what: "MaxAge 0", r: drivers.Resource{Name: rs[3].Name, Parameters: rs[3].Parameters}},
		{what: "a parameter change", r: changed, verify: func() {
			if st := f.brokerTopics(t, []string{changed.Name})[changed.Name]; st.partitions != 3 {
				t.Errorf("%s after a parameter change to 3 partitions: got %+v", changed.Name, st)
			}
		}},
		{what: "a dry run", r: dry},
		{what: "an observation older than MaxAge", r: rs[4], setup: func() {
			f.backend.observed.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
		}},
		{what: "an outage since the observation", r: rs[5], setup: func() {
			f.backend.observed.now = time.Now
			if err := f.broker.Kill(); err != nil {
				t.Fatal(err)
			}
			short, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if _, err := f.backend.Inspect(short, rs[6]); !drivers.IsUnavailable(err) {
				t.Errorf("Inspect with the broker down: want unavailable, got %v", err)
			}
			if err := f.broker.StartAgain(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		if c.setup != nil {
			c.setup()
		}
		_, base = f.requests(t, base)
		_, err := f.backend.Ensure(ctx, c.r)
		if c.r.Name == rs[5].Name && drivers.IsUnavailable(err) {
			// A connection the restart closed may carry the first
			// create: a create is sent once (a lost answer must not
			// read as someone else's topic), so that pass fails as
			// unreachable and the next one creates the topic.
			_, err = f.backend.Ensure(ctx, c.r)
		}
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		delta, base = f.requests(t, base)
		if delta["Metadata"] == 0 {
			t.Errorf("Ensure after %s: want the topic read again, got requests %v", c.what, delta)
		}
		if c.verify != nil {
			c.verify()
			_, base = f.requests(t, base)
		}
	}
}

// TestObservationsDroppedOnOutage: a request that fails as unreachable
// drops every observation, while an error about one topic keeps them.
func TestObservationsDroppedOnOutage(t *testing.T) {
	b := &Backend{name: "kafka", observed: newObservations()}
	b.observed.put("a", topicState{exists: true}, time.Now())
	calls := []*call[struct{}, topicState]{{topic: "a"}}
	failRequest(b, calls, fmt.Errorf("topic a: %w", errTopic))
	if _, ok := b.observed.get("a", time.Minute); !ok || calls[0].err == nil {
		t.Errorf("after an error about a topic: want the observation kept and the call failed, got kept %v, err %v", ok, calls[0].err)
	}
	failRequest(b, calls, &net.OpError{Op: "dial", Err: fmt.Errorf("connection refused")})
	if _, ok := b.observed.get("a", time.Minute); ok || !drivers.IsUnavailable(calls[0].err) {
		t.Errorf("after an unreachable broker: want every observation dropped and the call unavailable, got kept %v, err %v", ok, calls[0].err)
	}
}

var errTopic = fmt.Errorf("INVALID_CONFIG")

// TestAwaitSweepWaitsForTheSweepReadingTheTopic: a call without an
// observation waits for a sweep in flight that reads its topic, not for
// one that does not.
func TestAwaitSweepWaitsForTheSweepReadingTheTopic(t *testing.T) {
	o := newObservations()
	done := o.startSweep([]string{"a", "b"})
	waited := make(chan string, 2)
	go func() { o.awaitSweep(context.Background(), "c"); waited <- "c" }()
	if got := <-waited; got != "c" {
		t.Fatalf("want c first, got %s", got)
	}
	go func() { o.awaitSweep(context.Background(), "a"); waited <- "a" }()
	select {
	case got := <-waited:
		t.Fatalf("awaitSweep(%s) returned while the sweep reading it was in flight", got)
	case <-time.After(50 * time.Millisecond):
	}
	o.put("a", topicState{exists: true}, time.Now())
	done()
	if got := <-waited; got != "a" {
		t.Fatalf("want a, got %s", got)
	}
	if _, ok := o.get("a", time.Minute); !ok {
		t.Error("want the sweep's observation of a")
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.startSweep([]string{"d"}) // never finishes
	cancel()
	o.awaitSweep(ctx, "d") // returns: its context ended
}

// TestAwaitSweepWaitsForTheTopicsChunk: a sweep read chunk by chunk lets
// the calls waiting for a topic go on when that topic's chunk is done,
// while the calls waiting for a later chunk still wait; its end releases
// every chunk.
func TestAwaitSweepWaitsForTheTopicsChunk(t *testing.T) {
	o := newObservations()
	chunkDone, end := o.startSweepChunks([][]string{{"a", "b"}, {"c"}})
	waited := make(chan string, 3)
	for _, tp := range []string{"a", "c"} {
		go func() { o.awaitSweep(context.Background(), tp); waited <- tp }()
	}
	select {
	case got := <-waited:
		t.Fatalf("awaitSweep(%s) returned before its chunk was read", got)
	case <-time.After(50 * time.Millisecond):
	}
	chunkDone(0)
	if got := <-waited; got != "a" {
		t.Fatalf("want a once the first chunk is done, got %s", got)
	}
	select {
	case got := <-waited:
		t.Fatalf("awaitSweep(%s) returned while its chunk was still being read", got)
	case <-time.After(50 * time.Millisecond):
	}
	chunkDone(0) // again: harmless
	end()
	if got := <-waited; got != "c" {
		t.Fatalf("want c once the sweep ended, got %s", got)
	}
	o.awaitSweep(context.Background(), "b") // the sweep is over: returns at once
}

func names(rs []drivers.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// TestCreateWithoutAnswerIsNotRepeated: a CreateTopics the broker did not
// answer before the caller's deadline (the broker hung) may still be
// carried out, here because another caller in the same request waits
// longer. The topic's observation (missing, from Inspect) no longer
// stands: the next Ensure reads the topic and finds it, instead of creating
// it a second time.
func TestCreateWithoutAnswerIsNotRepeated(t *testing.T) {
	f := newCountingFixture(t, &Driver{})
	ctx := context.Background()
	gaveUp := drivers.Resource{Name: "unanswered", MaxAge: time.Minute, Parameters: map[string]string{"partitions": "2"}}
	waited := drivers.Resource{Name: "answered", MaxAge: time.Minute, Parameters: map[string]string{"partitions": "2"}}
	for _, r := range []drivers.Resource{gaveUp, waited} {
		if in, err := f.backend.Inspect(ctx, r); err != nil || in.Exists {
			t.Fatalf("inspect %s: want missing, got %+v, %v", r.Name, in, err)
		}
	}
	if err := f.broker.Pause(); err != nil {
		t.Fatal(err)
	}
	// Both calls join one CreateTopics request; the first gives up after a
	// second, the second keeps the request going until the broker answers.
	errs := make(chan error, 2)
	go func() {
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := f.backend.Ensure(short, gaveUp)
		errs <- err
	}()
	go func() {
		_, err := f.backend.Ensure(ctx, waited)
		errs <- err
	}()
	if err := <-errs; err == nil {
		t.Fatal("Ensure against the paused broker with a 1 s deadline: want an error")
	}
	if err := f.broker.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatalf("Ensure that waited for the broker: %v", err)
	}
	if st := f.brokerTopics(t, []string{gaveUp.Name})[gaveUp.Name]; st.partitions != 2 {
		t.Fatalf("the request both calls were in was carried out: want %s created, got %+v", gaveUp.Name, st)
	}
	_, base := f.requests(t, nil)
	res, err := f.backend.Ensure(ctx, gaveUp)
	if err != nil || res.Created {
		t.Fatalf("Ensure after the unanswered create: want the existing topic, got %+v, %v", res, err)
	}
	delta, _ := f.requests(t, base)
	if delta["CreateTopics"] != 0 || delta["Metadata"] == 0 {
		t.Errorf("Ensure after an unanswered create: want the topic read, not created again, got requests %v", delta)
	}
}

// TestLateReadDoesNotOutliveADoubt: a read that started before a write got
// no answer (or before an outage dropped everything) is not recorded when
// its answer comes after: it would show the topic missing, and the next
// Ensure would create it a second time.
func TestLateReadDoesNotOutliveADoubt(t *testing.T) {
	o := newObservations()
	clock := time.Unix(1000, 0)
	o.now = func() time.Time { return clock }
	readAt := clock // a Metadata is sent
	clock = clock.Add(time.Second)
	o.forget("a") // a CreateTopics sent after it got no answer
	clock = clock.Add(time.Second)
	o.put("a", topicState{}, readAt) // the Metadata's answer: missing
	if st, ok := o.get("a", time.Minute); ok {
		t.Fatalf("after a doubt, a read from before it: want no observation, got %+v", st)
	}
	o.put("a", topicState{exists: true}, clock) // a read after the doubt
	if st, ok := o.get("a", time.Minute); !ok || !st.exists {
		t.Fatalf("a read after the doubt: want it recorded, got %+v, %v", st, ok)
	}

	readAt = clock
	clock = clock.Add(time.Second)
	o.clear() // the broker became unreachable
	o.put("b", topicState{}, readAt)
	if _, ok := o.get("b", time.Minute); ok {
		t.Fatal("after an outage, a read from before it: want no observation")
	}
	o.put("b", topicState{}, clock)
	if _, ok := o.get("b", time.Minute); !ok {
		t.Fatal("a read after the outage: want it recorded")
	}
}

// TestSweepBeforeFirstEnsureKeepsItsObservations: a process's first sweep
// (a start, a shard taken) records its observations before any Ensure has
// said how old one may be. Pruning used that unknown age as 0, so every
// 1024th record dropped all the others, and the Ensure calls after the
// sweep read their topics again: 1,500 Kafka requests at a cold start of
// 10,000 on four replicas, against none needed.
func TestSweepBeforeFirstEnsureKeepsItsObservations(t *testing.T) {
	o := newObservations()
	clock := time.Unix(1000, 0)
	o.now = func() time.Time { return clock }
	n := 3*pruneEvery + 1
	end := o.startSweep(nil)
	for i := range n {
		o.put(fmt.Sprintf("t%05d", i), topicState{exists: true}, clock)
		clock = clock.Add(time.Millisecond)
	}
	end()
	for i := range n {
		if _, ok := o.get(fmt.Sprintf("t%05d", i), time.Minute); !ok {
			t.Fatalf("after a sweep of %d topics and no Ensure before it: topic %d of its observations is gone", n, i)
		}
	}
	// Once asked, what is older than the age asked for is pruned.
	clock = clock.Add(2 * time.Minute)
	for i := range pruneEvery {
		o.put(fmt.Sprintf("u%05d", i), topicState{exists: true}, clock)
	}
	if _, ok := o.m["t00000"]; ok {
		t.Fatal("observations older than the largest MaxAge asked for were not pruned")
	}
}

// TestObservationsShareEqualConfigs: topics with equal dynamic configs
// hold one map; what get hands out is a copy, so a caller's change
// reaches neither the other topic nor a later get; a topic with other
// configs holds its own.
func TestObservationsShareEqualConfigs(t *testing.T) {
	o := newObservations()
	now := time.Now()
	o.put("a", topicState{exists: true, dynamic: map[string]string{"retention.ms": "1000", "cleanup.policy": "delete"}}, now)
	o.put("b", topicState{exists: true, dynamic: map[string]string{"cleanup.policy": "delete", "retention.ms": "1000"}}, now)
	o.put("c", topicState{exists: true, dynamic: map[string]string{"retention.ms": "2000"}}, now)
	if len(o.configs) != 2 {
		t.Errorf("want 2 shared config maps, got %d", len(o.configs))
	}
	if reflect.ValueOf(o.m["a"].st.dynamic).UnsafePointer() != reflect.ValueOf(o.m["b"].st.dynamic).UnsafePointer() {
		t.Error("want a and b to hold one map")
	}
	a, ok := o.get("a", time.Minute)
	if !ok {
		t.Fatal("want a's observation")
	}
	a.dynamic["retention.ms"] = "5"
	b, _ := o.get("b", time.Minute)
	again, _ := o.get("a", time.Minute)
	if b.dynamic["retention.ms"] != "1000" || again.dynamic["retention.ms"] != "1000" {
		t.Errorf("a caller's change reached the observations: b %v, a %v", b.dynamic, again.dynamic)
	}
	if c, _ := o.get("c", time.Minute); c.dynamic["retention.ms"] != "2000" {
		t.Errorf("want c's own configs, got %v", c.dynamic)
	}
}
