package kadm

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// BenchmarkEnsureExisting measures the steady state of the periodic
// re-check: Ensure on one of 1000 existing, converged topics. It reports
// latency (ns/op), requests per Ensure and writes per Ensure (which must be
// 0).
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
	f.counter.reset()
	i := 0
	for b.Loop() {
		if _, err := f.backend.Ensure(ctx, drivers.Resource{Name: names[i%n], Parameters: params}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	writes, all := f.counter.reset()
	b.ReportMetric(float64(all)/float64(i), "requests/op")
	b.ReportMetric(float64(writes)/float64(i), "writes/op")
	if writes != 0 {
		b.Fatalf("want no writes on converged topics, got %d", writes)
	}
}
