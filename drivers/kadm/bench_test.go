package kadm

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
