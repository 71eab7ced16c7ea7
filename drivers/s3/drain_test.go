package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// drainUnits is the conformance drain's step size: no divisor of what the
// fills write, so that steps end mid-page and mid-kind.
const drainUnits = 7

// drainCase is the drain contract (drivertest.DrainContract) on one
// server: a bucket of objects with multipart uploads in progress, and a
// versioned bucket with old versions and delete markers.
func (f *fixture) drainCase() drivertest.DrainCase {
	return drivertest.DrainCase{
		Backend:    f.backend,
		Requests:   f.counter,
		Units:      drainUnits,
		UnitsBound: true,
		Fills: []drivertest.DrainFill{
			{Name: "objects and uploads", Resource: drivers.Resource{Name: "drain-objects"}, Fill: func(t testing.TB, r drivers.Resource) drivers.Content {
				c := f.fill(t, r.Name, "obj/", 23)
				for i := range 2 {
					f.startUpload(t, r.Name, fmt.Sprintf("upload/%d", i))
				}
				c.Objects += 2
				return c
			}},
			{Name: "versions and delete markers", Resource: drivers.Resource{Name: "drain-versioned", Parameters: map[string]string{ParamVersioning: "true"}},
				Fill: func(t testing.TB, r drivers.Resource) drivers.Content {
					c := f.fill(t, r.Name, "v/", 8)
					again := f.fill(t, r.Name, "v/", 8)
					c.Objects += again.Objects
					c.Bytes += again.Bytes
					for i := range 3 {
						if _, err := f.raw.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(r.Name), Key: aws.String(fmt.Sprintf("v/%05d", i))}); err != nil {
							t.Fatal(err)
						}
						c.Objects++
					}
					return c
				}},
		},
		Count: func(t testing.TB, r drivers.Resource) int64 { return f.countEntries(t, r.Name) },
		Snapshot: func(t testing.TB, r drivers.Resource) string {
			return fmt.Sprintf("%s, tags %v", f.snapshot(t, r), tagsOf(t, f.raw, r.Name))
		},
		WriteRead: func(t testing.TB, r drivers.Resource) {
			f.put(t, r.Name, "after-drain.txt", "still here")
			out, err := f.raw.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(r.Name), Key: aws.String("after-drain.txt")})
			if err != nil {
				t.Fatalf("read after the drain: %v", err)
			}
			defer out.Body.Close() //nolint:errcheck // a read body
			b, err := io.ReadAll(out.Body)
			if err != nil || string(b) != "still here" {
				t.Fatalf("read after the drain: want %q, got %q, %v", "still here", b, err)
			}
		},
	}
}

// fill writes n objects prefix00000... of distinct sizes, with a tag on
// the bucket that the drain must keep, and returns what it wrote.
func (f *fixture) fill(t testing.TB, bucket, prefix string, n int) drivers.Content {
	t.Helper()
	ctx := context.Background()
	_, err := f.raw.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(bucket),
		Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("team"), Value: aws.String("payments")}}}})
	if err != nil {
		t.Fatalf("tag %s: %v", bucket, err)
	}
	c := drivers.Content{Known: true}
	for i := range n {
		body := strings.Repeat("x", 10+i)
		f.put(t, bucket, fmt.Sprintf("%s%05d", prefix, i), body)
		c.Objects++
		c.Bytes += int64(len(body))
	}
	return c
}

// startUpload starts a multipart upload with one part, left in progress.
func (f *fixture) startUpload(t testing.TB, bucket, key string) {
	t.Helper()
	ctx := context.Background()
	up, err := f.raw.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("start an upload to %s/%s: %v", bucket, key, err)
	}
	_, err = f.raw.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part"))})
	if err != nil {
		t.Fatalf("upload a part to %s/%s: %v", bucket, key, err)
	}
}

// countEntries counts, out of band, a bucket's object versions, delete
// markers and multipart uploads (its current objects where the server
// implements no versions).
func (f *fixture) countEntries(t testing.TB, bucket string) int64 {
	t.Helper()
	ctx := context.Background()
	var n int64
	vp := s3.NewListObjectVersionsPaginator(f.raw, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	for vp.HasMorePages() {
		out, err := vp.NextPage(ctx)
		if isNotImplemented(err) {
			op := s3.NewListObjectsV2Paginator(f.raw, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
			for op.HasMorePages() {
				out, err := op.NextPage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				n += int64(len(out.Contents))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int64(len(out.Versions) + len(out.DeleteMarkers))
	}
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}
	for {
		out, err := f.raw.ListMultipartUploads(ctx, in)
		if isNotImplemented(err) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n += int64(len(out.Uploads))
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	return n
}

// fillMany writes n one-byte objects o/000000... with 16 writers.
func (f *fixture) fillMany(b testing.TB, bucket string, n int) {
	b.Helper()
	f.many(b, n, func(i int) error {
		_, err := f.raw.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("o/%06d", i)), Body: bytes.NewReader([]byte("x"))})
		return err
	})
}

// deleteMany deletes the first n objects fillMany wrote, without a
// version: on a versioned bucket, n delete markers.
func (f *fixture) deleteMany(b testing.TB, bucket string, n int) {
	b.Helper()
	f.many(b, n, func(i int) error {
		_, err := f.raw.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("o/%06d", i))})
		return err
	})
}

// many runs op for 0 to n-1 with 16 workers.
func (f *fixture) many(b testing.TB, n int, op func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if err := op(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// TestDrainJurisdiction: a drain of a bucket in an R2 jurisdiction goes to
// the jurisdiction's endpoint (a second real server here, with the same
// keys, as R2's are): the EU bucket is emptied and kept, and the account
// endpoint's bucket of the same name keeps its object.
func TestDrainJurisdiction(t *testing.T) {
	ctx := context.Background()
	account := newFixture(t, ImplVersityGW, s3test.Options{}, nil)
	euSrv := s3test.Start(t, ImplVersityGW, s3test.Options{AccessKey: account.srv.AccessKey, SecretKey: account.srv.SecretKey})
	cfg := *account.cfg
	cfg.Implementation = ImplR2
	cfg.JurisdictionEndpoints = map[string]string{"eu": euSrv.Endpoint}
	r2, _ := open(t, &cfg)
	eu := &fixture{raw: rawClient(t, &cfg, euSrv.Endpoint)}
	for _, fx := range []*fixture{account, eu} {
		if _, err := fx.raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("eu-data")}); err != nil {
			t.Fatal(err)
		}
	}
	eu.fill(t, "eu-data", "eu/", 5)
	account.put(t, "eu-data", "account-only.txt", "account data")
	r := drivers.Resource{Name: "eu-data", Parameters: map[string]string{ParamJurisdiction: "eu"}}
	var deleted int64
	for i := 0; ; i++ {
		step, err := r2.Drain(ctx, r, drivers.DrainLimits{Units: 2})
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		deleted += step.Deleted.Objects
		if step.Done {
			break
		}
		if i > 5 {
			t.Fatalf("want Done within 6 steps, got %+v", step)
		}
	}
	if deleted != 5 {
		t.Errorf("want the EU bucket's 5 objects deleted, got %d", deleted)
	}
	if n := eu.countEntries(t, "eu-data"); n != 0 {
		t.Errorf("want the EU bucket empty, got %d entries", n)
	}
	if ok, err := r2.exists(ctx, eu.raw, "eu-data"); !ok || err != nil {
		t.Errorf("want the EU bucket kept, got exists=%v %v", ok, err)
	}
	out, err := account.raw.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("eu-data")})
	if err != nil || len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "account-only.txt" {
		t.Fatalf("want the account endpoint's eu-data untouched, got %v %v", out, err)
	}
}

// TestDrainBatches: one step with the default units empties a bucket of
// 2,500 object versions in DeleteObjects batches of 1,000, finds it empty
// and reports Done, with exactly the requests the server received (each
// with a minute: patientRequests).
func TestDrainBatches(t *testing.T) {
	forEachWith(t, s3test.Options{}, patientRequests, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		r := drivers.Resource{Name: "drain-batches"}
		f.ensure(t, r.Name, nil)
		f.fillMany(t, r.Name, 2500)
		f.counter.Reset()
		step, err := f.backend.Drain(ctx, r, drivers.DrainLimits{})
		if err != nil {
			t.Fatal(err)
		}
		ops := f.counter.Ops()
		if !step.Done || step.Deleted.Objects != 2500 || step.Deleted.Bytes != 2500 || !step.Remaining.Known || step.Remaining.Objects != 0 {
			t.Errorf("want one step deleting 2,500 objects of one byte and finding the bucket empty, got %+v", step)
		}
		if ops["DeleteObjects"] != 3 || ops["ListObjectVersions"] != 4 || ops["HeadBucket"] != 1 || ops["ListMultipartUploads"] != 1 {
			t.Errorf("want 1 HeadBucket, 1 ListMultipartUploads, 4 ListObjectVersions and 3 DeleteObjects, got %v", ops)
		}
		if _, all := f.counter.Reset(); step.Requests != all {
			t.Errorf("want the step's Requests to be the %d requests sent, got %d", all, step.Requests)
		}
	})
}

// TestDrainStopsWhenCalledOff (MinIO): a step of the default units over
// 2,500 object versions, whose drain is called off after its first batch
// (DrainLimits.Stop true from its second question on), ends there: 1,000
// deleted, not Done, 1,500 left in the bucket. Before, a cancel waited for
// the whole step, which deleted what the tenant wrote meanwhile.
func TestDrainStopsWhenCalledOff(t *testing.T) {
	f := newFixture(t, ImplMinIO, s3test.Options{}, patientRequests)
	ctx := context.Background()
	r := drivers.Resource{Name: "drain-called-off"}
	f.ensure(t, r.Name, nil)
	f.fillMany(t, r.Name, 2500)
	asked := 0
	step, err := f.backend.Drain(ctx, r, drivers.DrainLimits{Stop: func() bool {
		asked++
		return asked > 2 // the uploads' listing, then the first batch
	}})
	if err != nil {
		t.Fatal(err)
	}
	if step.Done || step.Deleted.Objects != 1000 {
		t.Errorf("called off after one batch: want 1,000 deleted and not Done, got %+v", step)
	}
	if got := f.countEntries(t, r.Name); got != 1500 {
		t.Errorf("want 1,500 entries left in the bucket, got %d", got)
	}
}

// TestDrainCountsWhatALostAnswerDeleted: a DeleteObjects whose answer is
// lost after the server deleted half of it (the proxy deletes the first
// half itself and then holds the answer past requestTimeout) still counts:
// the step halves its batch, lists again and counts, of the lost batch,
// what no longer lists. Without it, a slow server's drain of 3,000 objects
// reported 2,009 deleted (CI at c3a08d7, SeaweedFS).
func TestDrainCountsWhatALostAnswerDeleted(t *testing.T) {
	f := newFixture(t, ImplMinIO, s3test.Options{}, nil)
	ctx := context.Background()
	const bucket, n = "lost-answer", 400
	// Long enough for a loaded machine's MinIO to answer the batches of
	// 100 that follow: a second timeout would be the step's error.
	const timeout = 10 * time.Second
	f.ensure(t, bucket, nil)
	putMany(t, f.raw, bucket, n)
	target, err := url.Parse(f.srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var lost atomic.Bool
	keyRE := regexp.MustCompile(`<Key>([^<]*)</Key>`)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.URL.Query()["delete"]; ok && r.Method == http.MethodPost && lost.CompareAndSwap(false, true) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var half []types.ObjectIdentifier
			keys := keyRE.FindAllStringSubmatch(string(body), -1)
			for _, k := range keys[:len(keys)/2] {
				half = append(half, types.ObjectIdentifier{Key: aws.String(k[1])})
			}
			if _, err := f.raw.DeleteObjects(context.Background(), &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: half}}); err != nil {
				t.Errorf("the proxy's delete of half the batch: %v", err)
			}
			select {
			case <-time.After(3 * timeout):
			case <-r.Context().Done():
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	cfg := *f.cfg
	cfg.Endpoint = slow.URL
	cfg.RequestTimeout = drivers.Duration{Duration: timeout}
	cfg.DeleteSlice = 200
	be, _ := open(t, &cfg)
	step, err := be.Drain(ctx, drivers.Resource{Name: bucket}, drivers.DrainLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if !lost.Load() {
		t.Fatal("the proxy never held a DeleteObjects")
	}
	if !step.Done || step.Deleted.Objects != n || step.Deleted.Bytes != n {
		t.Errorf("want one step deleting all %d objects of one byte, 100 of them by the request whose answer was lost; got %+v", n, step)
	}
	if left := f.countEntries(t, bucket); left != 0 {
		t.Errorf("want the bucket empty, got %d entries", left)
	}
}

// TestSettle: of a lost batch, an entry the listing no longer shows is
// counted (with its bytes, as one of the step's units) when the listing
// reached the end or covered its key; one still listed is forgotten (the
// batch that deletes it counts it); one at or past the last key of a
// truncated listing waits for the next. A version is its key and its
// version ID: another version of the same key listed does not hide it.
func TestSettle(t *testing.T) {
	id := func(key, version string) types.ObjectIdentifier {
		o := types.ObjectIdentifier{Key: aws.String(key)}
		if version != "" {
			o.VersionId = aws.String(version)
		}
		return o
	}
	lost := func() []entry {
		return []entry{
			{id("a", "v1"), 1},  // gone, before the last key
			{id("b", "v1"), 10}, // still listed: forgotten
			{id("b", "v2"), 20}, // gone, though b's v1 lists
			{id("c", "v1"), 30}, // the last key, v1 not listed: waits if truncated
			{id("d", "v1"), 40}, // past the last key: waits if truncated
		}
	}
	listed := []types.ObjectIdentifier{id("b", "v1"), id("c", "v2")}
	for _, tc := range []struct {
		truncated      bool
		objects, bytes int64
		still          []string
	}{
		{truncated: true, objects: 2, bytes: 21, still: []string{"c", "d"}},
		{truncated: false, objects: 4, bytes: 91},
	} {
		d := &drain{left: 100, lost: lost()}
		d.settle(listed, tc.truncated)
		var still []string
		for _, e := range d.lost {
			still = append(still, aws.ToString(e.id.Key))
		}
		if d.step.Deleted.Objects != tc.objects || d.step.Deleted.Bytes != tc.bytes || d.left != 100-int(tc.objects) || !slices.Equal(still, tc.still) {
			t.Errorf("truncated=%v: want %d counted (%d bytes, %d units left) and %v still lost; got %d (%d bytes, %d left) and %v",
				tc.truncated, tc.objects, tc.bytes, 100-tc.objects, tc.still, d.step.Deleted.Objects, d.step.Deleted.Bytes, d.left, still)
		}
	}
	d := &drain{left: 5}
	d.settle(listed, false)
	if d.step.Deleted.Objects != 0 || d.left != 5 {
		t.Errorf("nothing lost: want nothing counted, got %+v, %d left", d.step.Deleted, d.left)
	}
}
