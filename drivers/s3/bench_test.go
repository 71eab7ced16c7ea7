package s3

import (
	"context"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// BenchmarkEnsureExisting measures the periodic re-check of a converged
// bucket with versioning (and, on MinIO, lifecycle): latency, requests per
// Ensure and writes per Ensure (which must be 0).
func BenchmarkEnsureExisting(b *testing.B) {
	for _, impl := range s3test.Implementations {
		b.Run(impl, func(b *testing.B) {
			f := newFixture(b, impl, s3test.Options{}, nil)
			params := map[string]string{"versioning": "true"}
			if impl == "minio" {
				params["lifecycle"] = `{"expirationDays": 30}`
			}
			ctx := context.Background()
			r := drivers.Resource{Name: "bench-bucket", Parameters: params}
			if _, err := f.backend.Ensure(ctx, r); err != nil {
				b.Fatal(err)
			}
			f.counter.Reset()
			n := 0
			for b.Loop() {
				if _, err := f.backend.Ensure(ctx, r); err != nil {
					b.Fatal(err)
				}
				n++
			}
			writes, all := f.counter.Reset()
			b.ReportMetric(float64(all)/float64(n), "requests/op")
			b.ReportMetric(float64(len(writes))/float64(n), "writes/op")
			if len(writes) != 0 {
				b.Fatalf("want no writes on a converged bucket, got %v", writes[:1])
			}
		})
	}
}
