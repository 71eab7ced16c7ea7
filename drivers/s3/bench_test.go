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

// BenchmarkDrain measures the drain of a bucket of 10,000 entries on each
// server, with the default step (10,000 units, DeleteObjects batches of
// 1,000), until a step reports Done: "plain", 10,000 one-byte objects;
// "versioned", 4,500 keys written twice and 1,000 of them deleted (9,000
// versions and 1,000 delete markers). It reports entries deleted per second
// of draining (the fill is not timed), the S3 requests the backend sent per
// 1,000 entries, counted by the SDK middleware, and the steps it took. Run
// with -benchtime=1x: each op fills the bucket anew.
func BenchmarkDrain(b *testing.B) {
	const entries = 10000
	fills := []struct {
		name   string
		params map[string]string
		fill   func(b *testing.B, f *fixture, bucket string)
	}{
		{"plain", nil, func(b *testing.B, f *fixture, bucket string) { f.fillMany(b, bucket, entries) }},
		{"versioned", map[string]string{ParamVersioning: "true"}, func(b *testing.B, f *fixture, bucket string) {
			f.fillMany(b, bucket, 4500)
			f.fillMany(b, bucket, 4500)
			f.deleteMany(b, bucket, 1000)
		}},
	}
	for _, impl := range ownerImplementations {
		b.Run(impl, func(b *testing.B) {
			f := newFixture(b, impl, s3test.Options{}, nil)
			for _, fl := range fills {
				b.Run(fl.name, func(b *testing.B) {
					ctx := context.Background()
					r := drivers.Resource{Name: "bench-drain-" + fl.name, Parameters: fl.params}
					if _, err := f.backend.Ensure(ctx, r); err != nil {
						b.Fatal(err)
					}
					var deleted, requests, steps int64
					var took time.Duration
					for range b.N {
						b.StopTimer()
						fl.fill(b, f, r.Name)
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
					if deleted != int64(b.N*entries) {
						b.Fatalf("want %d entries deleted, got %d", b.N*entries, deleted)
					}
					b.ReportMetric(float64(deleted)/took.Seconds(), "objects/s")
					b.ReportMetric(float64(requests)*1000/float64(deleted), "requests/1000objects")
					b.ReportMetric(float64(steps)/float64(b.N), "steps/drain")
				})
			}
		})
	}
}
