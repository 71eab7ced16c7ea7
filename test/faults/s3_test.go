package faults

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

var removedSoFar = regexp.MustCompile(`(\d+) removed so far`)

// runS3RestartDelete deletes a Buckety (retentionPolicy Delete) whose
// versioned bucket holds many objects, and SIGKILLs the S3 server in the
// middle of the recursive delete, restarting it on the same data a few
// seconds later (SeaweedFS takes about 17 s to take writes again).
// A sentinel bucket that buckety does not manage, and a retained Buckety's
// bucket, hold objects that must all survive.
func runS3RestartDelete(t *testing.T, e *env, p params, tb *table) {
	const run = "s3-restart-delete"
	r := rng(p.Seed, run)
	ns := e.namespace(fmt.Sprintf("f-s3-%d", r.Intn(1e6)))
	e.startController()
	ctx := context.Background()

	big := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-${name}",
		Parameters: map[string]string{"versioning": "true"}, RetentionPolicy: v1.RetentionDelete}}
	keep := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-${name}",
		Parameters: map[string]string{"versioning": "true"}, RetentionPolicy: v1.RetentionRetain}}
	for _, b := range []*v1.Buckety{big, keep} {
		if err := e.k8s.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if !wait.Until(time.Now().Add(p.Converge), func() bool {
		for _, b := range []*v1.Buckety{big, keep} {
			if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil || !ready(b.Status.Conditions, b.Generation) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the two Bucketies did not turn Ready within %s: %v / %v", p.Converge, big.Status.Conditions, keep.Status.Conditions)
	}
	bigBucket, keepBucket := ns+"-big", ns+"-keep"
	sentinel := fmt.Sprintf("%s-sentinel", ns)
	if _, err := e.s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(sentinel)}); err != nil {
		t.Fatal(err)
	}
	// Versions: every object is written, and a tenth are overwritten, so the
	// delete walks versions, not only keys.
	fill := func(bucket string, n int) {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		sem := make(chan struct{}, 16)
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer wg.Done()
				defer func() { <-sem }()
				key := fmt.Sprintf("dir%02d/obj%05d", i%37, i)
				writes := 1
				if i%10 == 0 {
					writes = 2
				}
				for w := 0; w < writes; w++ {
					if _, err := e.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(key + strconv.Itoa(w)))}); err != nil {
						errs <- err
						return
					}
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("fill %s: %v", bucket, err)
		}
	}
	fill(bigBucket, p.Objects)
	outside := p.Objects/10 + 5
	fill(keepBucket, outside)
	fill(sentinel, outside)
	before := e.versions(ctx, t, keepBucket) + e.versions(ctx, t, sentinel)

	if err := e.k8s.Delete(ctx, big); err != nil {
		t.Fatal(err)
	}
	progress := func() int {
		var b v1.Buckety
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(big), &b); err != nil {
			return -1
		}
		n := -1
		for _, c := range b.Status.Conditions {
			if m := removedSoFar.FindStringSubmatch(c.Message); m != nil {
				if v, err := strconv.Atoi(m[1]); err == nil && v > n {
					n = v
				}
			}
		}
		return n
	}
	// Kill once a third to two thirds of the versions are gone.
	total := p.Objects + p.Objects/10
	target := total/3 + r.Intn(total/3+1)
	var atKill int
	if !wait.Until(time.Now().Add(p.Converge), func() bool { atKill = progress(); return atKill >= target }) {
		tb.add(t, run, "delete reached the kill point", fmt.Sprintf("progress %d of %d versions, wanted %d", atKill, total, target), false)
		return
	}
	if err := e.s3.Kill(); err != nil {
		t.Fatal(err)
	}
	// Progress is watched from the kill on, across the restart: nothing
	// can be removed while the server is down, and SeaweedFS serves
	// deletes before Respawn returns (which waits until it takes writes),
	// so the delete may finish before Respawn does.
	after := watchProgress(progress)
	defer after()
	time.Sleep(time.Duration(2+r.Intn(4)) * time.Second)
	if err := e.s3.Respawn(); err != nil {
		t.Fatal(err)
	}
	gone := wait.Until(time.Now().Add(p.Converge), func() bool {
		err := e.k8s.Get(ctx, client.ObjectKeyFromObject(big), &v1.Buckety{})
		return apierrors.IsNotFound(err)
	})
	_, headErr := e.s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bigBucket)})
	bucketGone := headErr != nil
	tb.add(t, run, "delete completes (Buckety and bucket gone)", fmt.Sprintf("buckety gone=%v bucket gone=%v", gone, bucketGone), gone && bucketGone)
	remaining := before - e.versions(ctx, t, keepBucket) - e.versions(ctx, t, sentinel)
	tb.add(t, run, "object versions deleted outside that bucket", remaining, remaining == 0)
	most := after()
	tb.add(t, run, "progress counts on after the restart (removed so far)", fmt.Sprintf("%d at kill, %d after", atKill, most), most > atKill)
}

// watchProgress polls progress every 100 ms until the returned function is
// first called, which returns the most it saw (-1 for nothing); later
// calls return the same.
func watchProgress(progress func() int) func() int {
	stop, done := make(chan struct{}), make(chan struct{})
	most := -1
	go func() {
		defer close(done)
		for {
			most = max(most, progress())
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	return func() int {
		once.Do(func() { close(stop); <-done })
		return most
	}
}

// versions counts the object versions and delete markers in a bucket.
func (e *env) versions(ctx context.Context, t *testing.T, bucket string) int {
	t.Helper()
	n := 0
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	for {
		out, err := e.s3c.ListObjectVersions(ctx, in)
		if err != nil {
			t.Fatalf("list versions of %s: %v", bucket, err)
		}
		n += len(out.Versions) + len(out.DeleteMarkers)
		if !aws.ToBool(out.IsTruncated) {
			return n
		}
		in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
	}
}
