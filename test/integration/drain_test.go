package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// drainS3Backend is an s3 backend on srv with its root keys written in
// the config (the controller's environment holds only the shared MinIO's).
func drainS3Backend(name, impl string, srv *s3test.Server) config.Backend {
	c := s3driver.Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second)}
	return harness.S3(name, c)
}

// startDrainController runs a controller whose drain passes delete at
// most units objects each.
func startDrainController(t *testing.T, yaml string, units int) *controllerRun {
	t.Helper()
	return startControllerWith(t, yaml, nil, func(o *appcontroller.Options) {
		o.Recheck, o.DrainUnits = time.Hour, units
	})
}

// fillBucket writes n one-byte objects under prefix, 16 at a time.
func fillBucket(t *testing.T, cl *s3.Client, bucket, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem }()
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("%s%05d", prefix, i)), Body: strings.NewReader("x")})
			errs <- err
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// bucketEntries counts what a bucket holds: object versions and delete
// markers where versioned, current objects otherwise.
func bucketEntries(t *testing.T, cl *s3.Client, bucket string, versioned bool) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	if versioned {
		in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
		for {
			out, err := cl.ListObjectVersions(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			n += len(out.Versions) + len(out.DeleteMarkers)
			if !aws.ToBool(out.IsTruncated) {
				return n
			}
			in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
		}
	}
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.Contents)
	}
	return n
}

func requestDrain(t *testing.T, b *v1.Buckety, d *v1.DrainSpec) {
	t.Helper()
	patchSpec(t, b, func(s *v1.BucketySpec) { s.Drain = d })
}

// waitDrain waits until status.drain reports phase for request.
func waitDrain(t *testing.T, b *v1.Buckety, request string, phase v1.DrainPhase, timeout time.Duration) *v1.Buckety {
	t.Helper()
	var cur *v1.Buckety
	wait.For(t, timeout, fmt.Sprintf("status.drain %s %s", request, phase), func() (bool, string) {
		cur = getBuckety(t, b.Namespace, b.Name)
		d := cur.Status.Drain
		if d == nil {
			return false, "no status.drain; " + condString(cur.Status.Conditions)
		}
		return d.Request == request && d.Phase == phase, fmt.Sprintf("%+v; %s", *d, condString(cur.Status.Conditions))
	})
	return cur
}

func count(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestDrainS3: on MinIO, VersityGW and SeaweedFS, a drain requested on a
// bucket of 3,000 objects empties it in passes of at most 1,000 and keeps
// it: status.drain says Drained with what it deleted, Draining turns False
// (Drained), Ready stays True, the bucket exists and lists nothing, and
// DrainStarted and DrainCompleted are recorded.
func TestDrainS3(t *testing.T) {
	needInfra(t)
	const n = 3000
	for _, impl := range []string{"minio", "versitygw", "seaweedfs"} {
		t.Run(impl, func(t *testing.T) {
			srv := minio
			if impl != "minio" {
				srv = s3test.Start(t, impl, s3test.Options{})
			}
			startDrainController(t, harness.ConfigYAML(drainS3Backend("s3", impl, srv)), 1000)
			b, bucket, cl := filledBucket(t, srv, "drain", n)
			ns := b.Namespace
			start := time.Now()
			requestDrain(t, b, &v1.DrainSpec{Request: "r1"})
			cur := waitDrain(t, b, "r1", v1.DrainPhaseDrained, waitTimeout)
			t.Logf("%s: drained %d objects in %s (%d passes, %d requests)", impl, n, time.Since(start).Round(time.Millisecond), cur.Status.Drain.Passes, cur.Status.Drain.Requests)
			d := cur.Status.Drain
			// MinIO's usage comes from its periodic scan, which may lag the
			// fill even when its report is newer than the drain's start.
			if d.Initial == nil || (impl != "minio" && count(d.Initial.Objects) != n) {
				t.Errorf("want status.drain.initial to say %d objects (from a usage report measured at the start, or what was deleted), got %+v", n, d.Initial)
			} else {
				t.Logf("%s: status.drain.initial %d objects", impl, count(d.Initial.Objects))
			}
			if count(d.Deleted.Objects) != n || count(d.Current.Objects) != 0 || d.Passes < n/1000 || d.StartTime == nil || d.CompletionTime == nil {
				t.Errorf("want %d deleted, 0 left, at least %d passes, start and completion times; got %+v", n, n/1000, *d)
			}
			if _, err := cl.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
				t.Errorf("the bucket must be kept: %v", err)
			}
			if left := bucketEntries(t, cl, bucket, false); left != 0 {
				t.Errorf("want the bucket empty, got %d objects", left)
			}
			waitCondition(t, b, v1.ConditionDraining, metav1.ConditionFalse, v1.ReasonDrained, waitTimeout)
			waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			waitEvent(t, ns, v1.EventDrainStarted, `"r1"`)
			waitEvent(t, ns, v1.EventDrainCompleted, fmt.Sprintf("deleted %d objects", n))
		})
	}
}

// TestDrainVersionedMinIO: a versioned bucket is emptied of every version
// and delete marker, and stays versioned.
func TestDrainVersionedMinIO(t *testing.T) {
	needInfra(t)
	startDrainController(t, configYAML("kafka", "s3"), 500)
	ns := namespace(t)
	bucket := ns + "-versions"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "versions", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: bucket, Parameters: map[string]string{"versioning": "true"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	cl := rootS3(t)
	ctx := context.Background()
	fillBucket(t, cl, bucket, "o/", 1000)
	fillBucket(t, cl, bucket, "o/", 300) // second versions of o/00000..o/00299
	for i := 300; i < 500; i++ {         // delete markers
		if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("o/%05d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	before := bucketEntries(t, cl, bucket, true)
	if before != 1500 {
		t.Fatalf("want 1,000 + 300 versions and 200 delete markers, got %d entries", before)
	}
	requestDrain(t, b, &v1.DrainSpec{Request: "versions"})
	cur := waitDrain(t, b, "versions", v1.DrainPhaseDrained, waitTimeout)
	if got := count(cur.Status.Drain.Deleted.Objects); got != int64(before) {
		t.Errorf("want %d versions and markers deleted, got %d", before, got)
	}
	if left := bucketEntries(t, cl, bucket, true); left != 0 {
		t.Errorf("want no version or delete marker left, got %d", left)
	}
	v, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != "Enabled" {
		t.Errorf("want the bucket still versioned, got %q", v.Status)
	}
}

// filledBucket creates a Buckety name on the s3 backend (MinIO) in a new
// namespace, waits for it Ready and fills its bucket with n objects; it
// returns the Buckety, the bucket and a root client of the server.
func filledBucket(t *testing.T, srv *s3test.Server, name string, n int) (*v1.Buckety, string, *s3.Client) {
	t.Helper()
	ns := namespace(t)
	bucket := ns + "-" + name
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: bucket}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	cl := s3Client(t, srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)
	fillBucket(t, cl, bucket, "o/", n)
	return b, bucket, cl
}

// waitDeleting waits until b's drain made passes passes and deleted
// something.
func waitDeleting(t *testing.T, b *v1.Buckety, passes int64) {
	t.Helper()
	wait.For(t, waitTimeout, fmt.Sprintf("%d passes of the drain deleting", passes), func() (bool, string) {
		d := getBuckety(t, b.Namespace, b.Name).Status.Drain
		return d != nil && d.Passes >= passes && count(d.Deleted.Objects) > 0, fmt.Sprintf("%+v", d)
	})
}

// TestDrainCancelAndRestart: passes of 50 objects over 3,000. Removing
// spec.drain mid-way cancels (nothing more is deleted); a new request
// starts again, the controller is stopped mid-drain, and a new controller
// continues it to Drained from status.drain and the bucket.
func TestDrainCancelAndRestart(t *testing.T) {
	needInfra(t)
	const n = 3000
	yaml := configYAML("kafka", "s3")
	first := startDrainController(t, yaml, 50)
	b, bucket, cl := filledBucket(t, minio, "cancel", n)
	ns := b.Namespace
	requestDrain(t, b, &v1.DrainSpec{Request: "first"})
	waitDeleting(t, b, 1)
	requestDrain(t, b, nil)
	cur := waitDrain(t, b, "first", v1.DrainPhaseCancelled, waitTimeout)
	waitCondition(t, b, v1.ConditionDraining, metav1.ConditionFalse, v1.ReasonDrainCancelled, waitTimeout)
	waitEvent(t, ns, v1.EventDrainCancelled, `"first"`)
	left := bucketEntries(t, cl, bucket, false)
	deleted := count(cur.Status.Drain.Deleted.Objects)
	t.Logf("cancelled after %d passes: %d deleted, %d left", cur.Status.Drain.Passes, deleted, left)
	if left == 0 || left < n-int(deleted)-50 {
		t.Fatalf("want the drain cancelled mid-way with about %d objects left (one pass of 50 may have run meanwhile), got %d", n-int(deleted), left)
	}
	time.Sleep(2 * time.Second)
	if again := bucketEntries(t, cl, bucket, false); again != left {
		t.Fatalf("a cancelled drain deletes nothing more: %d objects, then %d", left, again)
	}

	requestDrain(t, b, &v1.DrainSpec{Request: "second"})
	wait.For(t, waitTimeout, "the second drain deleting", func() (bool, string) {
		d := getBuckety(t, ns, b.Name).Status.Drain
		return d != nil && d.Request == "second" && count(d.Deleted.Objects) > 0, fmt.Sprintf("%+v", d)
	})
	first.stop(t)
	mid := getBuckety(t, ns, b.Name).Status.Drain
	remaining := bucketEntries(t, cl, bucket, false)
	if mid.Phase != v1.DrainPhaseDraining || remaining == 0 {
		t.Fatalf("want the controller stopped mid-drain, got %+v with %d objects left", *mid, remaining)
	}
	t.Logf("controller stopped mid-drain: %d deleted so far, %d left", count(mid.Deleted.Objects), remaining)
	startDrainController(t, yaml, 50)
	cur = waitDrain(t, b, "second", v1.DrainPhaseDrained, waitTimeout)
	if rest := bucketEntries(t, cl, bucket, false); rest != 0 {
		t.Errorf("want the bucket empty after the resumed drain, got %d", rest)
	}
	// A pass whose status write the stop cut off deleted up to 50
	// objects that status.drain does not count.
	if got, want := count(cur.Status.Drain.Deleted.Objects), int64(left); got < want-50 || got > want {
		t.Errorf("want the resumed drain to count about %d deleted (what the cancelled one left), got %d", want, got)
	}
	if !bucketExists(t, bucket) {
		t.Errorf("the bucket must be kept")
	}

	// Written since, then the first request set again (a revert in Git of
	// the commit that asked for the second): refused, nothing deleted.
	for i := range 3 {
		if _, err := cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("after-%d", i)), Body: strings.NewReader("kept")}); err != nil {
			t.Fatal(err)
		}
	}
	requestDrain(t, b, &v1.DrainSpec{Request: "first"})
	cur = waitDrain(t, b, "first", v1.DrainPhaseRefused, waitTimeout)
	if !strings.Contains(cur.Status.Drain.Message, "handled before") {
		t.Errorf("want the refusal to say the request was handled before, got %q", cur.Status.Drain.Message)
	}
	waitEvent(t, ns, v1.EventDrainRefused, `"first" was handled before`)
	if got := bucketEntries(t, cl, bucket, false); got != 3 {
		t.Errorf("an earlier request set again must delete nothing: want the 3 objects written since, got %d", got)
	}
}

// topicRecords is a topic's records between its low and high watermarks.
func topicRecords(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ctx := context.Background()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		s, _ := starts.Lookup(o.Topic, o.Partition)
		n += o.Offset - s.Offset
	})
	return n
}

// produce writes n records to topic.
func produce(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("r%d", i))}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// kafkaDrainYAML: the shared broker as "kafka" (drain off: the kadm
// default) and "kafka-reset" (drain.allow: true), one service.
func kafkaDrainYAML() string {
	reset := sharedKafka("kafka-reset")
	reset.Service = "kafka"
	allow := true
	reset.Drain = &config.Drain{Allow: &allow}
	return harness.ConfigYAML(sharedKafka("kafka"), reset)
}

// TestDrainKafka: on a backend with drain.allow, a topic of 10,000
// records over three partitions is drained (DeleteRecords up to each high
// watermark) and kept; on the shared backend without it, the controller
// refuses the drain (as the webhook would) naming drain.allow.
func TestDrainKafka(t *testing.T) {
	needInfra(t)
	startDrainController(t, kafkaDrainYAML(), 0)
	ns := namespace(t)
	adm, cl := kafkaAdmin(t)

	topic := ns + ".reset"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "reset", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka-reset", Name: topic, Parameters: map[string]string{"partitions": "3"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	produce(t, cl, topic, 10000)
	if got := topicRecords(t, adm, topic); got != 10000 {
		t.Fatalf("want 10,000 records produced, got %d", got)
	}
	requestDrain(t, b, &v1.DrainSpec{Request: "reset-1"})
	cur := waitDrain(t, b, "reset-1", v1.DrainPhaseDrained, waitTimeout)
	d := cur.Status.Drain
	t.Logf("kafka: drained 10,000 records in %d passes, %d requests", d.Passes, d.Requests)
	if count(d.Deleted.Objects) != 10000 || d.Initial == nil || count(d.Initial.Objects) != 10000 || count(d.Current.Objects) != 0 {
		t.Errorf("want 10,000 records at the start and deleted, none left; got %+v (initial %+v)", *d, d.Initial)
	}
	if got := topicRecords(t, adm, topic); got != 0 {
		t.Errorf("want no records left, got %d", got)
	}
	if !topicInfoOf(t, topic) {
		t.Errorf("the topic must be kept")
	}
	waitEvent(t, ns, v1.EventDrainCompleted, "deleted 10000 records")

	kept := ns + ".kept"
	k := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: kept}}
	create(t, k)
	waitCondition(t, k, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	produce(t, cl, kept, 10)
	requestDrain(t, k, &v1.DrainSpec{Request: "nope"})
	cur = waitDrain(t, k, "nope", v1.DrainPhaseRefused, waitTimeout)
	if !strings.Contains(cur.Status.Drain.Message, "drain.allow: true") {
		t.Errorf("want the refusal to name drain.allow, got %q", cur.Status.Drain.Message)
	}
	waitCondition(t, k, v1.ConditionDraining, metav1.ConditionFalse, v1.ReasonDrainRefused, waitTimeout)
	waitEvent(t, ns, v1.EventDrainRefused, `"nope"`)
	if got := topicRecords(t, adm, kept); got != 10 {
		t.Errorf("a refused drain deletes nothing: want 10 records, got %d", got)
	}
}

func topicInfoOf(t *testing.T, name string) bool {
	t.Helper()
	return topic(t, name).exists
}

// TestDrainStuck: a broker stopped with SIGSTOP (open connections, no
// answers) makes the drain delete nothing; after stuckAfter (3s here) the
// Buckety reports Draining reason DrainStuck with a Warning event, and
// once the broker answers again the drain completes.
func TestDrainStuck(t *testing.T) {
	needInfra(t)
	br := kafka.Start(t, kafka.Options{})
	allow := true
	be := harness.Kadm("stuck", kadmdriver.Config{SeedBrokers: br.Addrs, RequestTimeout: harness.Duration(2 * time.Second)})
	be.Drain = &config.Drain{Allow: &allow, Interval: harness.Duration(time.Second)}
	startDrainController(t, harness.ConfigYAML(be), 0)
	ns := namespace(t)
	topic := ns + ".stuck"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: ns}, Spec: v1.BucketySpec{Backend: "stuck", Name: topic, Parameters: map[string]string{"partitions": "1"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce(t, cl, topic, 100)
	if err := br.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			if err := br.Resume(); err != nil {
				t.Error(err)
			}
		}
	}()
	requestDrain(t, b, &v1.DrainSpec{Request: "stuck", StuckAfter: &metav1.Duration{Duration: 3 * time.Second}})
	c := waitCondition(t, b, v1.ConditionDraining, metav1.ConditionTrue, v1.ReasonDrainStuck, waitTimeout)
	if !strings.Contains(c.Message, "deleted nothing for 3s") {
		t.Errorf("want the stuck message to say for how long, got %q", c.Message)
	}
	waitEvent(t, ns, v1.EventDrainStuck, `"stuck"`)
	if err := br.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	cur := waitDrain(t, b, "stuck", v1.DrainPhaseDrained, waitTimeout)
	if count(cur.Status.Drain.Deleted.Objects) != 100 {
		t.Errorf("want 100 records deleted once the broker answers, got %+v", *cur.Status.Drain)
	}
	waitCondition(t, b, v1.ConditionDraining, metav1.ConditionFalse, v1.ReasonDrained, waitTimeout)
}

// TestDrainSurvivesSIGKILL kills the real controller process (SIGKILL, as
// the kernel's OOM killer or a node loss would) mid-drain of a bucket on
// MinIO, right after a drain step deleted objects and before status.drain
// counted them, and starts it again. The drain completes from what the
// bucket and status.drain hold: the bucket is kept and empty, and
// status.drain.deleted counts everything filled except exactly what the
// killed step deleted (a pass whose status write was cut off is not
// counted; reference.md, Draining). The binary is built with the test
// hook (testhook.Tag).
func TestDrainSurvivesSIGKILL(t *testing.T) {
	needInfra(t)
	const n, units = 2000, 50
	kubeconfig, dir := asServiceAccount(t)
	pauseDir := t.TempDir()
	env := []string{testhook.Env + "=" + pauseDir}
	args := []string{"--drain-units", strconv.Itoa(units)}
	bin := buildController(t, "0.1.0", testhook.Tag)
	c := runBinaryArgs(t, bin, kubeconfig, dir, env, args)
	b, bucket, cl := filledBucket(t, minio, "sigkill", n)
	ns := b.Namespace
	requestDrain(t, b, &v1.DrainSpec{Request: "crash"})
	waitDeleting(t, b, 3)
	arm := filepath.Join(pauseDir, testhook.AfterDrainStep+".arm")
	if err := os.WriteFile(arm, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "controller paused right after a drain step", func() (bool, string) {
		_, err := os.Stat(filepath.Join(pauseDir, testhook.AfterDrainStep+".reached"))
		return err == nil, "not reached"
	})
	if err := c.p.Kill(); err != nil {
		t.Fatal(err)
	}
	c.p = nil
	mid := getBuckety(t, ns, b.Name).Status.Drain
	left := bucketEntries(t, cl, bucket, false)
	killed := n - int(count(mid.Deleted.Objects)) - left
	t.Logf("killed after %d passes: %d counted, %d deleted by the killed step, %d left", mid.Passes, count(mid.Deleted.Objects), killed, left)
	if mid.Phase != v1.DrainPhaseDraining || left == 0 || killed <= 0 || killed > units {
		t.Fatalf("want the controller killed mid-drain right after a step of 1 to %d deletions, got %+v with %d objects left and %d uncounted", units, *mid, left, killed)
	}

	if err := os.Remove(arm); err != nil {
		t.Fatal(err)
	}
	runBinaryArgs(t, bin, kubeconfig, dir, env, args)
	cur := waitDrain(t, b, "crash", v1.DrainPhaseDrained, waitTimeout)
	if rest := bucketEntries(t, cl, bucket, false); rest != 0 {
		t.Errorf("want the bucket empty after the resumed drain, got %d objects", rest)
	}
	if !bucketExists(t, bucket) {
		t.Errorf("the bucket must be kept")
	}
	if got, want := count(cur.Status.Drain.Deleted.Objects), int64(n-killed); got != want {
		t.Errorf("status.drain.deleted: want %d (the %d filled less the %d the killed step deleted), got %d", want, n, killed, got)
	}
	if cur.Status.Drain.Passes <= mid.Passes {
		t.Errorf("want the drain to have continued after the restart: %d passes before the kill, %d at the end", mid.Passes, cur.Status.Drain.Passes)
	}
}
