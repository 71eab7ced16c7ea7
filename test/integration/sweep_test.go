package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// sweepInterval is the drift sweep of these tests; the per-object
// re-check is an hour, so whatever is repaired before the waits' backstop
// (waitTimeout, minutes) was found by a sweep.
const sweepInterval = 2 * time.Second

// startSweepingController runs an in-process controller with the drift
// sweep every sweepInterval and every per-object re-check an hour away.
func startSweepingController(t *testing.T, yaml string, concurrent int) {
	t.Helper()
	startControllerWith(t, yaml, nil, func(o *appcontroller.Options) {
		o.MaxConcurrent, o.Recheck, o.DriftSweep, o.SweptRecheck = concurrent, time.Hour, sweepInterval, time.Hour
	})
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// sweeps counts the successful sweeps of a backend so far.
func sweeps(t *testing.T, backend string) float64 {
	return counterValue(t, metrics.DriftSweeps.WithLabelValues(backend, "ok"))
}

// enqueued counts the Bucketies the sweeps of a backend enqueued so far.
func enqueued(t *testing.T, backend string) float64 {
	return counterValue(t, metrics.DriftSweepEnqueued.WithLabelValues(backend))
}

// waitSweeps waits until n more sweeps of backend have finished.
func waitSweeps(t *testing.T, backend string, n float64) {
	t.Helper()
	from := sweeps(t, backend)
	wait.For(t, waitTimeout+time.Duration(n)*sweepInterval, fmt.Sprintf("%v sweeps of %s", n, backend), func() (bool, string) {
		got := sweeps(t, backend) - from
		return got >= n, fmt.Sprintf("%v sweeps", got)
	})
}

// TestDriftSweepRevertsOutOfBandChange: configs changed on the broker are
// reverted by the sweep although the per-object re-check is an hour away; partitions grown out of band surface ParameterDrift the same
// way, and drift already reported is not reconciled again at every sweep.
func TestDriftSweepRevertsOutOfBandChange(t *testing.T) {
	needInfra(t)
	const backend = "kafka-swept"
	startSweepingController(t, configYAML(backend, "s3"), 2)
	ns := namespace(t)
	name := ns + ".swept"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "swept", Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Name: name,
		Parameters: map[string]string{"partitions": "2", "config.retention.ms": "604800000"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitSweeps(t, backend, 1)

	adm, _ := kafkaAdmin(t)
	ctx := context.Background()
	changed := time.Now()
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1000")}, {Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, name); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "out-of-band configs reverted by the sweep", func() (bool, string) {
		d := topic(t, name).dynamic
		_, compact := d["cleanup.policy"]
		return d["retention.ms"] == "604800000" && !compact, fmtMap(d)
	})
	t.Logf("reverted %s after the out-of-band change (sweep every %s)", time.Since(changed).Round(10*time.Millisecond), sweepInterval)
	waitEvent(t, ns, "DriftRepaired", `config retention.ms "1000" -> "604800000"`)

	if _, err := adm.UpdatePartitions(ctx, 5, name); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, b, v1.ConditionParameterDrift, metav1.ConditionTrue, v1.ReasonDriftUnrepairable, waitTimeout)
	if !strings.Contains(c.Message, "service has 5, spec wants 2") {
		t.Errorf("want the driver's message with both counts, got %q", c.Message)
	}
	// Reported: the next sweeps leave it alone.
	waitSweeps(t, backend, 1)
	before := enqueued(t, backend)
	waitSweeps(t, backend, 3)
	if after := enqueued(t, backend); after != before {
		t.Errorf("drift already reported as ParameterDrift: want no Buckety enqueued by 3 sweeps, got %v", after-before)
	}
	if n := topic(t, name).partitions; n != 5 {
		t.Errorf("want partitions never shrunk (5), got %d", n)
	}
}

// TestDriftSweepCostIsBounded: once 200 topics are in sync, each sweep
// costs one Metadata and one DescribeConfigs request on the
// request-counting broker, makes no write, and enqueues nothing.
func TestDriftSweepCostIsBounded(t *testing.T) {
	needInfra(t)
	const n = 200
	br := kafka.Start(t, kafka.Options{CountRequests: true})
	const backend = "kafka-counted"
	startSweepingController(t, harness.ConfigYAML(harness.Kadm(backend, kadmdriver.Config{SeedBrokers: br.Addrs, RequestTimeout: harness.Duration(5 * time.Second)})), 16)
	ns := namespace(t)
	for i := 0; i < n; i++ {
		create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%03d", i), Namespace: ns}, Spec: v1.BucketySpec{Backend: backend,
			Parameters: map[string]string{"partitions": "1", "config.retention.ms": strconv.Itoa(60000 + i)}}})
	}
	ctx := context.Background()
	wait.For(t, 3*time.Minute, fmt.Sprintf("%d Bucketies Ready", n), func() (bool, string) {
		var list v1.BucketyList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, b := range list.Items {
			if meta.IsStatusConditionTrue(b.Status.Conditions, v1.ConditionReady) {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("%d of %d Ready", ready, n)
	})
	// Let a sweep see the settled state (statuses in the cache) first.
	waitSweeps(t, backend, 2)
	reqBefore, err := br.Requests()
	if err != nil {
		t.Fatal(err)
	}
	sweptBefore, enqBefore := sweeps(t, backend), enqueued(t, backend)
	waitSweeps(t, backend, 5)
	reqAfter, err := br.Requests()
	if err != nil {
		t.Fatal(err)
	}
	swept := sweeps(t, backend) - sweptBefore
	delta := map[string]int64{}
	var total int64
	for k, v := range reqAfter {
		if d := v - reqBefore[k]; d > 0 {
			delta[k] = d
			total += d
		}
	}
	t.Logf("%v sweeps of %d topics in sync: %v Kafka requests (%v)", swept, n, total, delta)
	if got := enqueued(t, backend) - enqBefore; got != 0 {
		t.Errorf("topics in sync: want nothing enqueued, got %v", got)
	}
	for _, w := range []string{"CreateTopics", "CreatePartitions", "IncrementalAlterConfigs", "DeleteTopics"} {
		if delta[w] != 0 {
			t.Errorf("topics in sync: want no %s, got %d", w, delta[w])
		}
	}
	// One Metadata and one DescribeConfigs per sweep (200 topics fit one
	// request each); one sweep may be in flight at either snapshot, and the
	// client may refresh its own metadata once.
	if limit := int64(2*(swept+1)) + 1; total > limit || delta["DescribeConfigs"] > int64(swept+1) {
		t.Errorf("%v sweeps of %d topics: want at most %d requests (2 per sweep), got %d: %v", swept, n, limit, total, delta)
	}
	if delta["DescribeConfigs"] < int64(swept-1) {
		t.Errorf("%v sweeps: want a DescribeConfigs per sweep, got %d: the counter does not see the sweep", swept, delta["DescribeConfigs"])
	}

	// Half of them changed out of band at once: all reverted by the
	// sweeps, in fewer requests than the topics changed.
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var altered []string
	for i := 0; i < n; i += 2 {
		altered = append(altered, fmt.Sprintf("t%03d", i))
	}
	repairedBefore := counterValue(t, metrics.DriftRepaired.WithLabelValues(backend))
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")}}, altered...); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	if reqBefore, err = br.Requests(); err != nil { // the controller's requests from here on
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, fmt.Sprintf("%d out-of-band changes repaired", len(altered)), func() (bool, string) {
		got := counterValue(t, metrics.DriftRepaired.WithLabelValues(backend)) - repairedBefore
		return got >= float64(len(altered)), fmt.Sprintf("%v repaired", got)
	})
	took := time.Since(changed)
	if reqAfter, err = br.Requests(); err != nil {
		t.Fatal(err)
	}
	delta, total = map[string]int64{}, 0
	for k, v := range reqAfter {
		if d := v - reqBefore[k]; d > 0 {
			delta[k] = d
			total += d
		}
	}
	t.Logf("%d of %d topics changed out of band: all reverted after %s, in %d Kafka requests (%v)", len(altered), n, took.Round(10*time.Millisecond), total, delta)
	if total >= int64(len(altered)) {
		t.Errorf("repairing %d topics: want fewer requests than topics, got %d: %v", len(altered), total, delta)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, altered...)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == "retention.ms" && c.MaybeValue() == "1" {
				t.Errorf("%s: want retention.ms reverted, got 1", rc.Name)
			}
		}
	}
}

// TestDriftSweepFindsDeletedBucket: a bucket deleted out of band is found
// by the sweep's ListBuckets and re-created by the reconcile it triggers,
// with the per-object re-check an hour away.
func TestDriftSweepFindsDeletedBucket(t *testing.T) {
	needInfra(t)
	const backend = "s3-swept"
	startSweepingController(t, configYAML("kafka", backend), 2)
	ns := namespace(t)
	name := ns + ".swept"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "swept", Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Name: name}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitSweeps(t, backend, 1)
	// s3 reads the bucket on every pass, so a pass still queued (this
	// Buckety's own follow-up, behind objects earlier tests left) would
	// repair the delete before any sweep: wait until none is.
	waitIdle(t)
	before := enqueued(t, backend)
	if _, err := rootS3(t).DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	wait.For(t, waitTimeout, "bucket deleted out of band re-created after a sweep", func() (bool, string) {
		return bucketExists(t, name), fmt.Sprintf("%v enqueued by sweeps", enqueued(t, backend)-before)
	})
	t.Logf("re-created %s after the out-of-band delete (sweep every %s)", time.Since(deleted).Round(10*time.Millisecond), sweepInterval)
	if got := enqueued(t, backend) - before; got < 1 {
		t.Errorf("want the Buckety enqueued by a sweep, got %v", got)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// TestDriftSweepOutageEnqueuesNothing: while the broker hangs, every sweep
// fails and enqueues nothing, so the 20 Bucketies on it are not reconciled
// all at once (they stay Ready, untouched); when it answers again the next
// sweep finds them in sync and still enqueues nothing.
func TestDriftSweepOutageEnqueuesNothing(t *testing.T) {
	needInfra(t)
	const n = 20
	br, yaml, backend := hungBroker(t)
	startSweepingController(t, yaml, 4)
	ns := namespace(t)
	var bs []*v1.Buckety
	for i := 0; i < n; i++ {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("o%02d", i), Namespace: ns}, Spec: v1.BucketySpec{Backend: backend,
			Name: fmt.Sprintf("%s.o%02d", ns, i), Parameters: map[string]string{"config.retention.ms": "60000"}}}
		create(t, b)
		bs = append(bs, b)
	}
	for _, b := range bs {
		waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	}
	waitSweeps(t, backend, 1)
	before := enqueued(t, backend)
	failedBefore := counterValue(t, metrics.DriftSweeps.WithLabelValues(backend, "error"))
	pause(t, br)
	// A failing sweep takes the request timeout (2 s) on top of the interval.
	wait.For(t, waitTimeout, "two failed sweeps", func() (bool, string) {
		got := counterValue(t, metrics.DriftSweeps.WithLabelValues(backend, "error")) - failedBefore
		return got >= 2, fmt.Sprintf("%v failed sweeps", got)
	})
	if got := enqueued(t, backend) - before; got != 0 {
		t.Errorf("backend unreachable: want nothing enqueued by the failed sweeps, got %v", got)
	}
	for _, b := range bs {
		got := getBuckety(t, ns, b.Name)
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1.ConditionReady) {
			t.Errorf("%s: want it left alone (Ready) by failed sweeps, got %s", b.Name, condString(got.Status.Conditions))
		}
	}
	if err := br.Resume(); err != nil {
		t.Fatal(err)
	}
	waitSweeps(t, backend, 2)
	if got := enqueued(t, backend) - before; got != 0 {
		t.Errorf("backend back, nothing drifted: want nothing enqueued, got %v", got)
	}
}
