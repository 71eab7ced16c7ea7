package s3

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// TestDeletePassOutlastsOneRequestTimeout: a Delete pass is several
// requests (HeadBucket, the upload listings and aborts, a version listing,
// DeleteObjects, DeleteBucket), each bounded by requestTimeout, the pass
// only by the caller. Through a proxy that holds every request 250 ms, a
// pass of eight requests takes 2 s and, with a requestTimeout of 1 s,
// still empties and deletes the bucket. One requestTimeout for the whole
// pass failed CI on a loaded machine, where VersityGW's DeleteObjects of
// a thousand versions alone took most of it.
func TestDeletePassOutlastsOneRequestTimeout(t *testing.T) {
	f := newFixture(t, ImplMinIO, s3test.Options{}, nil)
	ctx := context.Background()
	const bucket = "slowly-doomed"
	f.ensure(t, bucket, map[string]string{"versioning": "true"})
	for i := range 20 {
		if _, err := f.raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("k/%02d", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.raw.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("big/upload")}); err != nil {
		t.Fatal(err)
	}
	slow := slowProxy(t, f.srv.Endpoint, 250*time.Millisecond)
	cfg := *f.cfg
	cfg.Endpoint = slow.URL
	cfg.RequestTimeout = drivers.Duration{Duration: time.Second}
	slowBe, counter := open(t, &cfg)
	start := time.Now()
	if err := slowBe.Delete(ctx, drivers.Resource{Name: bucket}); err != nil {
		t.Fatalf("one Delete pass over 20 objects and an upload through the slow proxy: want the bucket deleted, got %v", err)
	}
	took := time.Since(start)
	if ok, err := f.backend.exists(ctx, f.raw, bucket); ok || err != nil {
		t.Fatalf("want the bucket gone, got exists=%v err=%v", ok, err)
	}
	if took < cfg.RequestTimeout.Duration {
		t.Errorf("the pass took %v over requests %v: want longer than one requestTimeout (%v), or the test proves nothing", took, counter.Ops(), cfg.RequestTimeout.Duration)
	}
}

// slowProxy is a reverse proxy to endpoint that holds every request for
// delay, closed when the test ends.
func slowProxy(t *testing.T, endpoint string, delay time.Duration) *httptest.Server {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	return slow
}
