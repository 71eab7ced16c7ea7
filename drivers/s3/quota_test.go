package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// putSize writes an object of n zero bytes out of band.
// A server that refuses a PUT before reading its body may close the
// connection while the body is still being sent; the client then sees a
// broken pipe, not the refusal (a race a loaded machine loses now and
// then). Such an answerless attempt is sent again, up to five times.
func (f *fixture) putSize(bucket, key string, n int) error {
	var err error
	for range 5 {
		_, err = f.raw.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(make([]byte, n))})
		var unsent *smithyhttp.RequestSendError
		if !errors.As(err, &unsent) {
			return err
		}
	}
	return err
}

// wantChanges checks an Ensure's Changes, exactly.
func wantChanges(t *testing.T, what string, res drivers.EnsureResult, want ...string) {
	t.Helper()
	if !slices.Equal(res.Changes, want) {
		t.Errorf("%s: want changes %q, got %q", what, want, res.Changes)
	}
}

// usageOf measures buckets through the backend's UsageReporter.
func (f *fixture) usageOf(t *testing.T, buckets ...string) []drivers.Usage {
	t.Helper()
	rs := make([]drivers.Resource, len(buckets))
	for i, b := range buckets {
		rs[i] = drivers.Resource{Name: b}
	}
	us, err := f.backend.Usage(context.Background(), rs)
	if err != nil {
		t.Fatalf("Usage(%v): %v", buckets, err)
	}
	if len(us) != len(rs) {
		t.Fatalf("Usage(%v): want %d answers, got %d", buckets, len(rs), len(us))
	}
	return us
}

// TestMinIOQuotaAndUsage: on MinIO the quota parameter is a hard quota:
// a PUT larger than it is refused at once, and one that would take the
// bucket past it once MinIO's scanner has counted what the bucket holds
// (which the usage report then shows); a quota an operator changed is set
// back, after a dry run that lists the change and writes nothing; removing
// the parameter removes the quota.
func TestMinIOQuotaAndUsage(t *testing.T) {
	// test/s3 runs MinIO's scanner at its fastest speed, a cycle a second:
	// the usage report (and the quota check that reads it) follows writes
	// within seconds, not the minutes of the default speed.
	f := newFixture(t, ImplMinIO, s3test.Options{}, nil)
	const bucket = "capped"
	capped := map[string]string{ParamQuota: "1Mi"}
	wantChanges(t, "create with a quota", f.ensure(t, bucket, capped), "created bucket capped", "quota none -> 1048576 bytes")
	if err := f.putSize(bucket, "big", 2<<20); !isCode(err, "XMinioAdminBucketQuotaExceeded") {
		t.Errorf("a 2 MiB PUT under a 1 MiB quota: want XMinioAdminBucketQuotaExceeded, got %v", err)
	}
	for _, k := range []string{"a", "b", "c"} {
		wantOK(t, "a 300 kB PUT under the quota", f.putSize(bucket, k, 300_000))
	}
	checkMinIOUsage(t, f, bucket)
	wait.For(t, 3*time.Minute, "a PUT past the quota refused", func() (bool, string) {
		err := f.putSize(bucket, "d", 200_000)
		return isCode(err, "XMinioAdminBucketQuotaExceeded"), fmt.Sprint(err)
	})

	// An operator raises the quota out of band.
	ctx := context.Background()
	if err := f.backend.minio.SetBucketQuota(ctx, bucket, minioadmin.BucketQuota{}.WithBytes(10<<20)); err != nil {
		t.Fatal(err)
	}
	const repair = "quota 10485760 bytes -> 1048576 bytes"
	dry, err := f.backend.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: capped, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	wantChanges(t, "dry run", dry, repair)
	if q := f.quota(t, bucket); q != 10<<20 {
		t.Errorf("after the dry run: want the quota untouched (10 MiB), got %d", q)
	}
	wantChanges(t, "Ensure", f.ensure(t, bucket, capped), repair)
	if q := f.quota(t, bucket); q != 1<<20 {
		t.Errorf("after Ensure: want the quota 1 MiB, got %d", q)
	}
	wantChanges(t, "Ensure again", f.ensure(t, bucket, capped))

	wantChanges(t, "quota removed", f.ensure(t, bucket, nil), "quota 1048576 bytes -> none")
	if q := f.quota(t, bucket); q != 0 {
		t.Errorf("after the parameter's removal: want no quota, got %d", q)
	}
	wantOK(t, "a 2 MiB PUT without a quota", f.putSize(bucket, "big", 2<<20))
	wantChanges(t, "no quota, Ensure again", f.ensure(t, bucket, nil))
}

// checkMinIOUsage: MinIO's data usage report, once its scanner has
// counted the bucket's three objects, tells their bytes and count, at the
// report's time; a bucket it never counted is unknown.
func checkMinIOUsage(t *testing.T, f *fixture, bucket string) {
	t.Helper()
	start := time.Now()
	var us []drivers.Usage
	wait.For(t, 3*time.Minute, "the usage report counting "+bucket, func() (bool, string) {
		us = f.usageOf(t, bucket, "never-made")
		return us[0].Known && us[0].Objects == 3, fmt.Sprintf("%+v", us[0])
	})
	u := us[0]
	if u.Bytes != 900_000 || u.Source != UsageSourceMinIO {
		t.Errorf("want 900000 bytes from %q, got %+v", UsageSourceMinIO, u)
	}
	if u.MeasuredAt.Before(start.Add(-time.Minute)) || u.MeasuredAt.After(time.Now()) {
		t.Errorf("want MeasuredAt the report's recent time, got %v (test started %v)", u.MeasuredAt, start)
	}
	if us[1].Known {
		t.Errorf("a bucket the report does not name: want unknown, got %+v", us[1])
	}
}

// TestListUsage: where there is no usage report (VersityGW here), a
// bucket's current objects are listed: their bytes and count, as of now;
// a bucket with more keys than the listing reads is unknown, as is one
// that does not exist.
func TestListUsage(t *testing.T) {
	f := newFixture(t, ImplVersityGW, s3test.Options{}, nil)
	f.backend.usage = usageListing{pages: 2, keys: 2}
	f.ensure(t, "four", nil)
	f.ensure(t, "five", nil)
	f.ensure(t, "none", nil)
	for i := range 5 {
		if i < 4 {
			wantOK(t, "put", f.putSize("four", fmt.Sprint("k", i), 1000+i))
		}
		wantOK(t, "put", f.putSize("five", fmt.Sprint("k", i), 10))
	}
	before := time.Now()
	us := f.usageOf(t, "four", "five", "none", "never-made")
	if u := us[0]; !u.Known || u.Bytes != 4006 || u.Objects != 4 || u.Source != UsageSourceList || u.MeasuredAt.Before(before) {
		t.Errorf("four objects in two pages: want 4006 bytes, 4 objects from %q as of now, got %+v", UsageSourceList, u)
	}
	if us[1].Known {
		t.Errorf("five objects, more than two pages of two: want unknown, got %+v", us[1])
	}
	if u := us[2]; !u.Known || u.Bytes != 0 || u.Objects != 0 {
		t.Errorf("an empty bucket: want known, 0 bytes, got %+v", u)
	}
	if us[3].Known {
		t.Errorf("a missing bucket: want unknown, got %+v", us[3])
	}
}

// TestListUsageCountsWhatATenantCannotList: a bucket whose every key was
// deleted with versioning on holds its data as noncurrent versions behind
// delete markers, and one with a multipart upload in progress holds its
// parts: a listing of current objects measures 0 bytes for both, and
// budget.AtLeastUsed then let a tenant lower the bucket's quota below
// what it holds and fill another under the same budget. The versioned
// bucket counts every version's bytes (no current object); the one with
// an upload in progress counts its uploaded part's bytes besides its
// current object (an abandoned upload must not leave it unknown for
// ever), and its object alone once the upload is aborted.
func TestListUsageCountsWhatATenantCannotList(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, ImplVersityGW, s3test.Options{}, nil)
	f.ensure(t, "kept-as-versions", map[string]string{ParamVersioning: "true"})
	f.ensure(t, "uploading", nil)
	for i, n := range []int{1000, 2000} {
		key := fmt.Sprint("k", i)
		wantOK(t, "put", f.putSize("kept-as-versions", key, n))
		if _, err := f.raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("kept-as-versions"), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	wantOK(t, "put", f.putSize("uploading", "done", 10))
	up, err := f.raw.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("uploading"), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.raw.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("uploading"), Key: aws.String("big"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, 5000))}); err != nil {
		t.Fatal(err)
	}
	us := f.usageOf(t, "kept-as-versions", "uploading")
	if u := us[0]; !u.Known || u.Bytes != 3000 || u.Objects != 0 || u.Source != UsageSourceVersions {
		t.Errorf("every key deleted, its versions kept: want 3000 bytes in no current object from %q, got %+v", UsageSourceVersions, u)
	}
	if u := us[1]; !u.Known || u.Bytes != 5010 || u.Objects != 1 || u.Source != UsageSourceList {
		t.Errorf("a multipart upload in progress, one part of 5000 bytes: want 5010 bytes in 1 object from %q, got %+v", UsageSourceList, u)
	}
	if _, err := f.raw.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("uploading"), Key: aws.String("big"), UploadId: up.UploadId}); err != nil {
		t.Fatal(err)
	}
	if u := f.usageOf(t, "uploading")[0]; !u.Known || u.Bytes != 10 || u.Objects != 1 || u.Source != UsageSourceList {
		t.Errorf("the upload aborted: want 10 bytes in 1 object from %q, got %+v", UsageSourceList, u)
	}
}

// TestListUsageCountsEachVersionOnce: VersityGW starts a page of a
// version listing again at its marker: a page that ends with a key's
// current version, the key having older ones, is followed by one that
// lists that version again. Each version is counted once.
func TestListUsageCountsEachVersionOnce(t *testing.T) {
	f := newFixture(t, ImplVersityGW, s3test.Options{}, nil)
	f.backend.usage = usageListing{pages: 10, keys: 2}
	f.ensure(t, "versioned", map[string]string{ParamVersioning: "true"})
	for _, k := range []string{"a", "b", "c"} {
		for _, n := range []int{1000, 200, 30} {
			wantOK(t, "put", f.putSize("versioned", k, n))
		}
	}
	if u := f.usageOf(t, "versioned")[0]; !u.Known || u.Bytes != 3690 || u.Objects != 3 || u.Source != UsageSourceVersions {
		t.Errorf("three versions each of three keys over pages of two: want 3690 bytes in 3 objects from %q, got %+v", UsageSourceVersions, u)
	}
}

// TestUsageUnreachable: a service that does not answer fails the
// measurement as a whole, on the report (MinIO) and on listings alike.
func TestUsageUnreachable(t *testing.T) {
	for _, impl := range []string{ImplMinIO, ImplVersityGW} {
		t.Run(impl, func(t *testing.T) {
			f := newFixture(t, impl, s3test.Options{}, func(c *Config) { c.RequestTimeout = drivers.Duration{Duration: 2 * time.Second} })
			f.ensure(t, "gone-soon", nil)
			if err := f.srv.Stop(); err != nil {
				t.Fatal(err)
			}
			_, err := f.backend.Usage(context.Background(), []drivers.Resource{{Name: "gone-soon"}})
			if !drivers.IsUnavailable(err) {
				t.Errorf("want an UnavailableError, got %v", err)
			}
		})
	}
}

// TestSeaweedFSQuotaAnonymousReadUsage, on one SeaweedFS (it takes a
// while to start): the quota parameter is the bucket's quota in
// SeaweedFS's extension, and a bucket over it takes no writes once the
// gateway has checked it (once a minute; it checks no single PUT); a
// quota disabled out of band is set again; removing the parameter removes
// the quota and the bucket takes writes again at once. Anonymous read
// behaves as on the other implementations (TestAnonymousRead), and usage
// is listed.
func TestSeaweedFSQuotaAnonymousReadUsage(t *testing.T) {
	f := newFixture(t, ImplSeaweedFS, s3test.Options{}, func(c *Config) { c.AllowAnonymousRead = true })
	const bucket = "capped"
	capped := map[string]string{ParamQuota: "1Mi"}
	wantChanges(t, "create with a quota", f.ensure(t, bucket, capped),
		"created bucket capped", "quota none -> 1048576 bytes", "block and ignore public ACLs (public access block: BlockPublicAcls, IgnorePublicAcls)")
	wantOK(t, "a 2 MiB PUT, which SeaweedFS does not check on its own", f.putSize(bucket, "big", 2<<20))
	over := time.Now()

	// While the gateway gets to its check:
	checkAnonymousRead(t, f)
	if u := f.usageOf(t, bucket)[0]; !u.Known || u.Bytes != 2<<20 || u.Objects != 1 || u.Source != UsageSourceList {
		t.Errorf("usage: want 2 MiB in 1 object from %q, got %+v", UsageSourceList, u)
	}

	wait.For(t, 150*time.Second, "a PUT into the bucket over its quota refused", func() (bool, string) {
		err := f.putSize(bucket, "small", 10)
		return isCode(err, "AccessDenied"), fmt.Sprint(err)
	})
	t.Logf("writes refused %s after the bucket went over its quota", time.Since(over).Round(time.Second))

	// An operator disables the quota (SeaweedFS keeps its size).
	disable := seaweedQuotas{f.backend.quotas.(seaweedQuotas).s}
	if _, err := disable.call(context.Background(), "PUT", bucket, []byte(`{"quota_size":1048576,"quota_unit":"B","quota_enabled":false}`), 204); err != nil {
		t.Fatal(err)
	}
	wantChanges(t, "Ensure after the quota was disabled", f.ensure(t, bucket, capped), "quota none -> 1048576 bytes")
	if q := f.quota(t, bucket); q != 1<<20 {
		t.Errorf("want the quota 1 MiB again, got %d", q)
	}

	wantChanges(t, "quota removed", f.ensure(t, bucket, nil), "quota 1048576 bytes -> none")
	wantOK(t, "a PUT once the quota is removed", f.putSize(bucket, "small", 10))
	wantChanges(t, "no quota, Ensure again", f.ensure(t, bucket, nil))
}
