package kadm

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// BenchmarkEnsureExisting measures the steady state of the periodic
// re-check: Ensure on one of 1000 existing, converged topics, one call at a
// time. It reports latency (ns/op; a lone call waits the coalescing linger
// once per request, twice here), requests per Ensure and writes per Ensure
// (which must be 0).
func BenchmarkEnsureExisting(b *testing.B) {
	const n = 1000
	f := newFixture(b, kafka.Options{}, nil)
	ctx := context.Background()
	params := map[string]string{"partitions": "3", "config.retention.ms": "604800000", "config.cleanup.policy": "delete"}
	configs := map[string]*string{"retention.ms": kadm.StringPtr("604800000"), "cleanup.policy": kadm.StringPtr("delete")}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("bench.topic.%04d", i)
	}
	for i := 0; i < n; i += 100 {
		resp, err := f.admin.CreateTopics(ctx, 3, -1, configs, names[i:i+100]...)
		if err != nil || resp.Error() != nil {
			b.Fatalf("create: %v %v", err, resp.Error())
		}
	}
	// Converge once so the loop measures the no-change path.
	for _, name := range names {
		if _, err := f.backend.Ensure(ctx, drivers.Resource{Name: name, Parameters: params}); err != nil {
			b.Fatal(err)
		}
	}
	f.counter.Reset()
	i := 0
	for b.Loop() {
		if _, err := f.backend.Ensure(ctx, drivers.Resource{Name: names[i%n], Parameters: params}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	writes, all := f.counter.Reset()
	b.ReportMetric(float64(all)/float64(i), "requests/op")
	b.ReportMetric(float64(len(writes))/float64(i), "writes/op")
	if len(writes) != 0 {
		b.Fatalf("want no writes on converged topics, got %v", writes)
	}
}

// BenchmarkEnsureConcurrent measures coalescing: each op is 1000 concurrent
// Ensure calls, first for 1000 new topics (creation), then again on the
// same, converged topics (the drift re-check). It reports the Kafka
// requests the broker received per Ensure call, counted by the broker
// itself, for each pass.
func BenchmarkEnsureConcurrent(b *testing.B) {
	const n = 1000
	f := newCountingFixture(b, &Driver{})
	ctx := context.Background()
	params := map[string]string{"partitions": "3", "config.retention.ms": "604800000"}
	if _, err := f.backend.Inspect(ctx, drivers.Resource{Name: "warm-up"}); err != nil {
		b.Fatal(err)
	}
	run := func(round int) {
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range errs {
			wg.Go(func() {
				<-start
				_, errs[i] = f.backend.Ensure(ctx, drivers.Resource{Name: fmt.Sprintf("bench.%d.%04d", round, i), Parameters: params})
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	var created, rechecked int64
	_, base := f.requests(b, nil)
	round := 0
	for b.Loop() {
		run(round)
		d, now := f.requests(b, base)
		created += total(d, "Metadata", "DescribeConfigs", "CreateTopics")
		run(round)
		d, base = f.requests(b, now)
		rechecked += total(d, "Metadata", "DescribeConfigs", "IncrementalAlterConfigs", "CreatePartitions")
		round++
	}
	b.ReportMetric(float64(created)/float64(round*n), "create-requests/Ensure")
	b.ReportMetric(float64(rechecked)/float64(round*n), "recheck-requests/Ensure")
	b.Logf("%d rounds of %d concurrent Ensure: %.1f requests per 1000 creations, %.1f per re-check of 1000", round, n, float64(created)/float64(round), float64(rechecked)/float64(round))
}

// BenchmarkDrain measures the drain of a topic of 10,000 records over
// three partitions until a step reports Done: records deleted per second
// of draining (producing is not timed), the Kafka requests the backend
// sent per drain (counted by a kgo hook) and the steps it took. Run with
// -benchtime=1x: each op fills the topic anew.
func BenchmarkDrain(b *testing.B) {
	const records = 10000
	f := newFixture(b, kafka.Options{}, nil)
	ctx := context.Background()
	r := drivers.Resource{Name: "bench-drain", Parameters: map[string]string{ParamPartitions: "3"}}
	if _, err := f.backend.Ensure(ctx, r); err != nil {
		b.Fatal(err)
	}
	var deleted, requests, steps int64
	var took time.Duration
	for range b.N {
		b.StopTimer()
		f.produce(b, r.Name, records)
		f.counter.Reset()
		b.StartTimer()
		start := time.Now()
		for done := false; !done; {
			step, err := f.backend.Drain(ctx, r, drivers.DrainLimits{})
			if err != nil {
				b.Fatal(err)
			}
			deleted += step.Deleted.Objects
			steps++
			done = step.Done
		}
		took += time.Since(start)
		_, all := f.counter.Reset()
		requests += int64(all)
	}
	if deleted != int64(b.N*records) {
		b.Fatalf("want %d records deleted, got %d", b.N*records, deleted)
	}
	b.ReportMetric(float64(deleted)/took.Seconds(), "records/s")
	b.ReportMetric(float64(requests)/float64(b.N), "requests/drain")
	b.ReportMetric(float64(steps)/float64(b.N), "steps/drain")
}
