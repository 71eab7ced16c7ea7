package kadm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// countingFixture is a broker that counts requests per API key, a backend
// on it opened by d, and an independent client to check the result with.
type countingFixture struct {
	broker  *kafka.Broker
	backend *Backend
	admin   *kadm.Client
	kgo     *kgo.Client
}

func newCountingFixture(t testing.TB, d *Driver) *countingFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	b := kafka.Start(t, kafka.Options{CountRequests: true})
	cfg := &Config{SeedBrokers: b.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 10 * time.Second}}
	if errs := cfg.Validate(field.NewPath("config")); len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	be, err := d.Open(context.Background(), "kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	opts, err := cfg.clientOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &countingFixture{broker: b, backend: be.(*Backend), admin: kadm.NewClient(cl), kgo: cl}
}

// requests returns the broker's request counts since the last call, by API
// name. The independent client must not be used between two calls.
func (f *countingFixture) requests(t testing.TB, since map[string]int64) (delta, now map[string]int64) {
	t.Helper()
	now, err := f.broker.Requests()
	if err != nil {
		t.Fatal(err)
	}
	delta = map[string]int64{}
	for k, n := range now {
		if d := n - since[k]; d > 0 {
			delta[k] = d
		}
	}
	return delta, now
}

func total(m map[string]int64, keys ...string) int64 {
	var n int64
	for _, k := range keys {
		n += m[k]
	}
	return n
}

// brokerTopics reads every topic's partitions and dynamic configs with the
// independent client, in one Metadata and one DescribeConfigs request.
func (f *countingFixture) brokerTopics(t testing.TB, names []string) map[string]topicState {
	t.Helper()
	ctx := context.Background()
	req := kmsg.NewPtrMetadataRequest()
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, f.kgo)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]topicState{}
	for _, rt := range resp.Topics {
		if rt.ErrorCode == 0 {
			out[*rt.Topic] = topicState{exists: true, partitions: int32(len(rt.Partitions)), dynamic: map[string]string{}}
		}
	}
	var existing []string
	for n := range out {
		existing = append(existing, n)
	}
	rcs, err := f.admin.DescribeTopicConfigs(ctx, existing...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe configs of %s: %v", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				out[rc.Name].dynamic[c.Key] = c.MaybeValue()
			}
		}
	}
	return out
}

// TestCoalescingManyConcurrentCalls runs 1000 concurrent Ensure calls for
// new topics, each with its own parameters, then drift repair, Inspect and
// Delete on all of them, and counts what the real broker received: a
// handful of requests per phase instead of several per topic, with every
// topic correct and each call's error its own.
func TestCoalescingManyConcurrentCalls(t *testing.T) {
	const n = 1000
	// A 100 ms linger, not the default 5 ms: the counts below prove that
	// calls pending together share requests, and must not depend on how
	// fast a loaded machine starts 1000 goroutines (a CI run with the
	// default split the first phase into 17 requests). The default's
	// figures are BenchmarkEnsureConcurrent's.
	f := newCountingFixture(t, &Driver{Linger: 100 * time.Millisecond})
	ctx := context.Background()
	names := make([]string, n)
	params := make([]map[string]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("tenant%d.orders.%04d", i%7, i)
		params[i] = map[string]string{
			"partitions":          strconv.Itoa(1 + i%4),
			"config.retention.ms": strconv.Itoa(60000 + i),
		}
	}
	// Three topics the broker must refuse, in the same batches.
	bad := map[int]bool{17: true, 500: true, 901: true}
	for i := range bad {
		params[i]["replicationFactor"] = "7" // one broker
	}
	// The client's first contact (ApiVersions, Metadata) is not coalescing.
	if _, err := f.backend.Inspect(ctx, drivers.Resource{Name: "warm-up"}); err != nil {
		t.Fatal(err)
	}
	_, base := f.requests(t, nil)

	// all calls fn for every topic at once: the goroutines wait for one
	// start signal, as reconcile workers released by one informer sync do.
	all := func(fn func(i int) error) []error {
		errs := make([]error, n)
		startSignal := make(chan struct{})
		var wg sync.WaitGroup
		for i := range names {
			wg.Go(func() {
				<-startSignal
				errs[i] = fn(i)
			})
		}
		close(startSignal)
		wg.Wait()
		return errs
	}
	start := time.Now()
	results := make([]drivers.EnsureResult, n)
	errs := all(func(i int) (err error) {
		results[i], err = f.backend.Ensure(ctx, drivers.Resource{Name: names[i], Parameters: params[i]})
		return err
	})
	took := time.Since(start)
	created, base := f.requests(t, base)
	for i, err := range errs {
		switch {
		case bad[i]:
			if err == nil || !strings.Contains(err.Error(), "create topic "+names[i]+":") || drivers.IsUnavailable(err) {
				t.Errorf("%s: want its own create error, not unavailability, got %v", names[i], err)
			}
		case err != nil:
			t.Errorf("%s: %v", names[i], err)
		case !results[i].Created:
			t.Errorf("%s: want Created, got %+v", names[i], results[i])
		}
	}
	got := f.brokerTopics(t, names)
	_, base = f.requests(t, base) // not the backend's
	for i, name := range names {
		st, ok := got[name]
		if bad[i] {
			if ok {
				t.Errorf("%s: want no topic after the refused create", name)
			}
			continue
		}
		if want := int32(1 + i%4); !ok || st.partitions != want || st.dynamic["retention.ms"] != strconv.Itoa(60000+i) || len(st.dynamic) != 1 {
			t.Errorf("%s: want %d partitions and retention.ms %d, got %+v", name, want, 60000+i, st)
		}
	}
	createReqs := total(created, "Metadata", "DescribeConfigs", "CreateTopics")
	t.Logf("1000 concurrent Ensure (new topics) in %s: %d Metadata + DescribeConfigs + CreateTopics requests (all requests: %v); without coalescing about %d", took.Round(time.Millisecond), createReqs, created, 3*n)
	// Two batches of 500 need 2 Metadata and 2 CreateTopics, plus the
	// client's own metadata look-ups (about 10 idle); the bound leaves room
	// for a loaded machine's split batches and is still a fiftieth of the
	// about 3000 without coalescing.
	if createReqs > 60 {
		t.Errorf("want at most 60 Metadata+DescribeConfigs+CreateTopics requests for %d new topics, got %d (%v)", n, createReqs, created)
	}

	// Drift on 100 topics and a partition increase on 100 others: the
	// re-check of all 1000 repairs them in a few requests.
	var alters []string
	for i := 0; i < 100; i++ {
		if !bad[i] {
			alters = append(alters, names[i])
		}
	}
	resps, err := f.admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}, {Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, alters...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resps {
		if r.Err != nil {
			t.Fatalf("out-of-band alter of %s: %v", r.Name, r.Err)
		}
	}
	for i := 100; i < 200; i++ {
		params[i]["partitions"] = "5"
	}
	_, base = f.requests(t, base) // not the backend's
	start = time.Now()
	errs = all(func(i int) (err error) {
		if bad[i] {
			return nil
		}
		results[i], err = f.backend.Ensure(ctx, drivers.Resource{Name: names[i], Parameters: params[i]})
		return err
	})
	took = time.Since(start)
	repaired, base := f.requests(t, base)
	for i, err := range errs {
		if err != nil {
			t.Errorf("re-check %s: %v", names[i], err)
			continue
		}
		var want []string
		switch {
		case bad[i]:
			continue
		case i < 100:
			want = []string{fmt.Sprintf(`config retention.ms "1" -> "%d"`, 60000+i), `config cleanup.policy "compact" removed (not in spec; broker default applies)`}
		case i < 200:
			want = []string{fmt.Sprintf("partitions %d -> 5", 1+i%4)}
		}
		if strings.Join(results[i].Changes, "|") != strings.Join(want, "|") {
			t.Errorf("re-check %s: want changes %q, got %q", names[i], want, results[i].Changes)
		}
	}
	got = f.brokerTopics(t, names)
	_, base = f.requests(t, base)
	for i, name := range names {
		if bad[i] {
			continue
		}
		want := int32(1 + i%4)
		if i >= 100 && i < 200 {
			want = 5
		}
		if st := got[name]; st.partitions != want || st.dynamic["retention.ms"] != strconv.Itoa(60000+i) || len(st.dynamic) != 1 {
			t.Errorf("after re-check %s: want %d partitions and only retention.ms %d, got %+v", name, want, 60000+i, st)
		}
	}
	recheckReqs := total(repaired, "Metadata", "DescribeConfigs", "IncrementalAlterConfigs", "CreatePartitions")
	t.Logf("re-check of 1000 topics (100 drifted, 100 grown) in %s: %d requests (%v); without coalescing about %d", took.Round(time.Millisecond), recheckReqs, repaired, 2*n+200)
	// One batch each is the ideal; a loaded machine splits a window now
	// and then, so the bound allows a few splits. Without coalescing it is
	// about 2200, and 100 of each write.
	if recheckReqs > 30 || repaired["IncrementalAlterConfigs"] > 10 || repaired["CreatePartitions"] > 10 {
		t.Errorf("want at most 30 requests, at most 10 of them IncrementalAlterConfigs and 10 CreatePartitions, got %v", repaired)
	}

	// Inspect everything (every topic empty), then Delete everything.
	inspections := make([]drivers.Inspection, n)
	errs = all(func(i int) (err error) {
		inspections[i], err = f.backend.Inspect(ctx, drivers.Resource{Name: names[i]})
		return err
	})
	inspected, base := f.requests(t, base)
	for i, err := range errs {
		if err != nil || inspections[i].Exists == bad[i] || inspections[i].HasContent {
			t.Errorf("inspect %s: want exists=%v and no content, got %+v %v", names[i], !bad[i], inspections[i], err)
		}
	}
	t.Logf("1000 concurrent Inspect: %v", inspected)
	if m := total(inspected, "Metadata", "ListOffsets"); m > 20 {
		t.Errorf("want at most 20 Metadata+ListOffsets requests for 1000 Inspect calls, got %v", inspected)
	}
	errs = all(func(i int) error { return f.backend.Delete(ctx, drivers.Resource{Name: names[i]}) })
	deleted, _ := f.requests(t, base)
	for i, err := range errs {
		if err != nil {
			t.Errorf("delete %s: %v", names[i], err)
		}
	}
	t.Logf("1000 concurrent Delete: %v", deleted)
	// Batched: 1000 deletes without it are 1000 requests. A loaded
	// machine splits the batching windows (6 in a CI run with a load
	// average of 25, against 1-3 idle), so the bound is what proves
	// batching, not the idle figure.
	if deleted["DeleteTopics"] > 20 {
		t.Errorf("want at most 20 DeleteTopics requests for 1000 deletes, got %v", deleted)
	}
	if left := f.brokerTopics(t, names); len(left) != 0 {
		t.Errorf("want every topic deleted, %d left", len(left))
	}
}

// TestCoalescingCancelledCallerLeavesOthers: with a long linger, a caller
// whose context ends while its call waits for the batch returns at once
// with its context's error, its topic is left out of the request, and the
// other callers' topics are created.
func TestCoalescingCancelledCallerLeavesOthers(t *testing.T) {
	f := newCountingFixture(t, &Driver{Linger: 300 * time.Millisecond})
	if _, err := f.backend.Inspect(context.Background(), drivers.Resource{Name: "warm-up"}); err != nil { // metadata of the first pass
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 5)
	took := make([]time.Duration, 5)
	for i := range errs {
		wg.Go(func() {
			ctx := context.Background()
			if i == 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(20*time.Millisecond, cancel)
			}
			start := time.Now()
			_, errs[i] = f.backend.Ensure(ctx, drivers.Resource{Name: fmt.Sprintf("cancel.%d", i)})
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	// Returned when cancelled, not when the batch it left was answered:
	// before every caller that waited for it (a figure in time, an order
	// in the check).
	if !errors.Is(errs[0], context.Canceled) || took[0] >= slices.Min(took[1:]) {
		t.Errorf("cancelled caller: want context.Canceled before the callers that waited for the batch returned, got %v after %s (they after %v)", errs[0], took[0], took[1:])
	}
	for i := 1; i < 5; i++ {
		if errs[i] != nil {
			t.Errorf("caller %d: want success, got %v", i, errs[i])
		}
	}
	got := f.brokerTopics(t, []string{"cancel.0", "cancel.1", "cancel.2", "cancel.3", "cancel.4"})
	if _, ok := got["cancel.0"]; ok || len(got) != 4 {
		t.Errorf("want the four topics of the callers that waited, and not the cancelled one's, got %v", got)
	}
}

// TestBatcherCancelsRequestOnlyWhenEveryCallerLeft checks the batcher's
// bookkeeping with a request function that waits to be released: one
// caller leaving does not cancel the request the others wait for; the last
// one leaving does. (The broker tests above cover the requests themselves.)
func TestBatcherCancelsRequestOnlyWhenEveryCallerLeft(t *testing.T) {
	started := make(chan context.Context, 1)
	release := make(chan struct{})
	b := newBatcher(context.Background(), true, time.Millisecond, 10, 5*time.Second, func(ctx context.Context, calls []*call[struct{}, string]) {
		started <- ctx
		select {
		case <-release:
		case <-ctx.Done():
		}
		for _, c := range calls {
			c.out = "answer for " + c.topic
			if ctx.Err() != nil {
				c.err = ctx.Err()
			}
		}
	})
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	defer cancelB()
	type res struct {
		out string
		err error
	}
	a, bb, b2 := make(chan res, 1), make(chan res, 1), make(chan res, 1)
	go func() { out, err := b.do(ctxA, "a", struct{}{}); a <- res{out, err} }()
	go func() { out, err := b.do(ctxB, "b", struct{}{}); bb <- res{out, err} }()
	go func() { out, err := b.do(ctxB, "b", struct{}{}); b2 <- res{out, err} }() // shares b's answer
	var reqCtx context.Context
	select {
	case reqCtx = <-started:
	case <-time.After(time.Minute):
		t.Fatal("the batch was never sent (a minute's backstop)")
	}
	cancelA()
	if r := <-a; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("caller a: want context.Canceled, got %+v", r)
	}
	time.Sleep(20 * time.Millisecond)
	if reqCtx.Err() != nil {
		t.Fatalf("want the request still running for caller b, got %v", reqCtx.Err())
	}
	close(release)
	for _, ch := range []chan res{bb, b2} {
		if r := <-ch; r.err != nil || r.out != "answer for b" {
			t.Errorf("caller b: want its own answer, got %+v", r)
		}
	}

	// Now every caller leaves: the request is cancelled.
	release = make(chan struct{})
	ctxC, cancelC := context.WithCancel(context.Background())
	c := make(chan res, 1)
	go func() { out, err := b.do(ctxC, "c", struct{}{}); c <- res{out, err} }()
	reqCtx = <-started
	cancelC()
	<-c
	select {
	case <-reqCtx.Done():
	case <-time.After(time.Minute):
		t.Fatal("want the request cancelled once its only caller left (a minute's backstop)")
	}
	close(release)
}

// TestCoalescedWritesToOneTopicAreNotMerged: two concurrent Delete calls of
// one topic are not put in one request (Kafka refuses a duplicate topic in
// one request); both succeed.
func TestCoalescedWritesToOneTopicAreNotMerged(t *testing.T) {
	f := newCountingFixture(t, &Driver{Linger: 50 * time.Millisecond})
	ctx := context.Background()
	if _, err := f.backend.Ensure(ctx, drivers.Resource{Name: "twice"}); err != nil {
		t.Fatal(err)
	}
	_, base := f.requests(t, nil)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = f.backend.Delete(ctx, drivers.Resource{Name: "twice"}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("delete #%d: %v", i, err)
		}
	}
	if d, _ := f.requests(t, base); d["DeleteTopics"] != 2 {
		t.Errorf("want two DeleteTopics requests (one per write to the topic), got %v", d)
	}
}

// TestBatcherRunIgnoresACallerAlreadyGone: a batch whose first caller left
// between being picked and the request being sent still runs, uncancelled,
// for the caller that waits.
func TestBatcherRunIgnoresACallerAlreadyGone(t *testing.T) {
	for i := 0; i < 50; i++ {
		b := newBatcher(context.Background(), false, time.Millisecond, 10, 5*time.Second, func(ctx context.Context, calls []*call[struct{}, string]) {
			time.Sleep(time.Millisecond) // let a wrongly scheduled cancel land
			for _, c := range calls {
				c.err = ctx.Err()
			}
		})
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		a := &call[struct{}, string]{ctx: gone, topic: "a", done: make(chan struct{})}
		w := &call[struct{}, string]{ctx: context.Background(), topic: "b", done: make(chan struct{})}
		b.run([]*call[struct{}, string]{a, w})
		if w.err != nil {
			t.Fatalf("run %d: want the request to run for the waiting caller, got %v", i, w.err)
		}
	}
}
