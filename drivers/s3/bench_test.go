package s3

import (
	"context"
	"testing"
	"time"

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

// BenchmarkDrain measures the drain of a bucket of 10,000 one-byte objects
// on each server, with the default step (10,000 units, DeleteObjects
// batches of 1,000), until a step reports Done: objects deleted per second
// of draining (the fill is not timed) and the S3 requests the backend sent
// per 1,000 objects, counted by the SDK middleware, as well as the steps
// it took. Run with -benchtime=1x: each op fills the bucket anew.
func BenchmarkDrain(b *testing.B) {
	const objects = 10000
	for _, impl := range ownerImplementations {
		b.Run(impl, func(b *testing.B) {
			f := newFixture(b, impl, s3test.Options{}, nil)
			ctx := context.Background()
			r := drivers.Resource{Name: "bench-drain"}
			if _, err := f.backend.Ensure(ctx, r); err != nil {
				b.Fatal(err)
			}
			var deleted, requests, steps int64
			var took time.Duration
			for range b.N {
				b.StopTimer()
				f.fillMany(b, r.Name, objects)
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
			if deleted != int64(b.N*objects) {
				b.Fatalf("want %d objects deleted, got %d", b.N*objects, deleted)
			}
			b.ReportMetric(float64(deleted)/took.Seconds(), "objects/s")
			b.ReportMetric(float64(requests)*1000/float64(deleted), "requests/1000objects")
			b.ReportMetric(float64(steps)/float64(b.N), "steps/drain")
		})
	}
}
