package s3

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// TestSweepFindsDeletedBuckets: a sweep of 50 buckets is one ListBuckets
// and reports nothing; a bucket deleted out of band is reported missing,
// confirmed by one HeadBucket, and nothing else is asked per bucket.
func TestSweepFindsDeletedBuckets(t *testing.T) {
	forEach(t, s3test.Options{}, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		const n = 50
		rs := make([]drivers.Resource, n)
		for i := range rs {
			rs[i] = drivers.Resource{Name: fmt.Sprintf("sweep-%02d", i)}
			f.ensure(t, rs[i].Name, nil)
		}
		if f.backend.SweepCoverage() != drivers.SweepPartial {
			t.Errorf("s3 sees only existence in a sweep: want SweepPartial, got %v", f.backend.SweepCoverage())
		}
		f.counter.Reset()
		v, err := f.backend.Sweep(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range v {
			if v[i].Drifted() || v[i].Drift != nil || v[i].Err != nil {
				t.Errorf("%s exists: want an empty verdict, got %+v", rs[i].Name, v[i])
			}
		}
		if ops := f.counter.Ops(); len(ops) != 1 || ops["ListBuckets"] != 1 {
			t.Errorf("sweep of %d buckets: want one ListBuckets, got %v", n, ops)
		}

		if _, err := f.raw.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("sweep-07")}); err != nil {
			t.Fatal(err)
		}
		f.counter.Reset()
		v, err = f.backend.Sweep(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			want := ""
			if r.Name == "sweep-07" {
				want = "bucket sweep-07 does not exist"
			}
			if got := strings.Join(v[i].Changes, "|"); got != want || v[i].Err != nil {
				t.Errorf("%s: want changes %q, got %+v", r.Name, want, v[i])
			}
		}
		if ops := f.counter.Ops(); len(ops) != 2 || ops["ListBuckets"] != 1 || ops["HeadBucket"] != 1 {
			t.Errorf("sweep with one bucket gone: want one ListBuckets and one HeadBucket, got %v", ops)
		}
	})
}
