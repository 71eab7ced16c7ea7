package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestAdoptionSafety: a pre-existing topic or bucket holding content is not
// claimed (nothing stamped, no Secret); nor is an empty one made outside
// buckety, and retentionPolicy Delete leaves it alone.
func TestAdoptionSafety(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	ctx := context.Background()
	adm, cl := kafkaAdmin(t)
	full, empty := ns+".preexisting", ns+".preexisting-empty"
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, full); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, empty); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: full, Partition: 1, Value: []byte("someone's data")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bucket := ns + "-preexisting"
	if _, err := rootS3(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rootS3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct{ name, backend, resource, detail string }{
		{"topic", "kafka", full, "already exists and holds content"},
		{"bucket", "s3", bucket, "already exists and holds content"},
	} {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns},
			Spec: v1.BucketySpec{Backend: c.backend, Name: c.resource, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: c.name + "-creds"}}}
		create(t, b)
		cond := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
		if !strings.Contains(cond.Message, c.resource) || !strings.Contains(cond.Message, c.detail) {
			t.Errorf("%s: want the message to name %s and say %q, got %q", c.name, c.resource, c.detail, cond.Message)
		}
		if strings.Contains(cond.Message, "precious") || strings.Contains(cond.Message, "records") {
			t.Errorf("%s: want nothing of the resource's content quoted to a tenant that does not own it, got %q", c.name, cond.Message)
		}
		if b.Status.BackendResourceName != "" || b.Status.Provenance != "" || b.Status.DriverMajor != nil {
			t.Errorf("%s: want nothing stamped, got %+v", c.name, b.Status)
		}
		time.Sleep(500 * time.Millisecond)
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(a), a); err == nil {
			waitCondition(t, a, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBucketyNotReady, waitTimeout)
		}
		if ok, _ := gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: c.name + "-creds", Namespace: ns}}); !ok {
			t.Errorf("%s: want no Secret issued for a refused adoption", c.name)
		}
	}

	// Empty, but made outside buckety: refused as well (it may be a live
	// topic whose records expired), and its deletion with
	// retentionPolicy Delete deletes nothing.
	refused := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: ns},
		Spec: v1.BucketySpec{Backend: "kafka", Name: empty, RetentionPolicy: v1.RetentionDelete}}
	create(t, refused)
	cond := waitCondition(t, refused, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	if !strings.Contains(cond.Message, "made outside buckety") || refused.Status.Provenance != "" {
		t.Errorf("want the empty topic refused as made outside buckety, nothing stamped; got %q, provenance %q", cond.Message, refused.Status.Provenance)
	}
	if err := k8s.Delete(ctx, refused); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "refused Buckety deleted", func() (bool, string) { return gone(t, refused) })
	if !topic(t, empty).exists {
		t.Fatal("retentionPolicy Delete deleted a topic buckety had refused")
	}
}

// TestTwoBucketiesOneTopic: the first claim wins; the second is refused
// naming the owner, and deleting it (even with Delete) keeps the topic.
func TestTwoBucketiesOneTopic(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns1, ns2 := namespace(t), namespace(t)
	shared := ns1 + ".shared"
	first := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns1}, Spec: v1.BucketySpec{Backend: "kafka", Name: shared}}
	create(t, first)
	waitCondition(t, first, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	second := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: ns2}, Spec: v1.BucketySpec{Backend: "kafka", Name: shared, RetentionPolicy: v1.RetentionDelete}}
	create(t, second)
	c := waitCondition(t, second, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNameConflict, waitTimeout)
	// The owner is another tenant's: the message names the resource, not
	// the Buckety that owns it (see TestNothingForeignInStatusOrEvents).
	if strings.Contains(c.Message, ns1+"/first") || !strings.Contains(c.Message, shared) || !strings.Contains(c.Message, "owned by another Buckety") {
		t.Errorf("want the conflict to name %s but not its owner %s/first, got %q", shared, ns1, c.Message)
	}
	if second.Status.Provenance != "" {
		t.Errorf("want nothing stamped on the loser, got %+v", second.Status)
	}
	if err := k8s.Delete(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "second Buckety deleted", func() (bool, string) { return gone(t, second) })
	if !topic(t, shared).exists {
		t.Fatal("deleting the Buckety that lost the claim deleted the owner's topic")
	}
	waitCondition(t, first, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// TestBackendRenamed: a controller restarted with the backend renamed keeps
// status.backend and reports BackendUnavailable, paused.
func TestBackendRenamed(t *testing.T) {
	needInfra(t)
	run := startController(t, configYAML("kafka", "s3"), nil, 2*time.Second)
	ns := namespace(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.orders", Parameters: map[string]string{"partitions": "1"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	run.stop(t)
	startController(t, configYAML("kafka-renamed", "s3"), nil, 2*time.Second)
	c := waitCondition(t, b, v1.ConditionBackendUnavailable, metav1.ConditionTrue, v1.ReasonBackendNotConfigured, waitTimeout)
	if !strings.Contains(c.Message, `backend "kafka" is not in the controller config`) {
		t.Errorf("want the message to name the missing backend, got %q", c.Message)
	}
	if b.Status.Backend != "kafka" {
		t.Errorf("want status.backend to stay kafka, got %q", b.Status.Backend)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBackendNotConfigured, waitTimeout)
	patch(t, b, `{"spec":{"parameters":{"partitions":"3"}}}`)
	time.Sleep(4 * time.Second)
	if n := topic(t, ns+".orders").partitions; n != 1 {
		t.Errorf("paused reconciliation must not touch the backend, but partitions became %d", n)
	}
}

// TestOutOfBandDrift: a config changed on the broker is reverted by the
// re-check (every 2 s here, and nothing else looks: event DriftRepaired);
// partitions grown beyond the spec surface ParameterDrift.
func TestOutOfBandDrift(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, 2*time.Second)
	ns := namespace(t)
	name := ns + ".drift"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "drift", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name,
		Parameters: map[string]string{"partitions": "2", "config.retention.ms": "604800000"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	adm, _ := kafkaAdmin(t)
	ctx := context.Background()
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1000")}, {Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")}}, name); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "out-of-band configs reverted by a re-check", func() (bool, string) {
		d := topic(t, name).dynamic
		_, compact := d["cleanup.policy"]
		return d["retention.ms"] == "604800000" && !compact, strings.TrimSpace(strings.ReplaceAll(fmtMap(d), "\n", " "))
	})
	waitEvent(t, ns, "DriftRepaired", `config retention.ms "1000" -> "604800000"`)
	if _, err := adm.UpdatePartitions(ctx, 5, name); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, b, v1.ConditionParameterDrift, metav1.ConditionTrue, v1.ReasonDriftUnrepairable, waitTimeout)
	if !strings.Contains(c.Message, "service has 5, spec wants 2") {
		t.Errorf("want the driver's message with both counts, got %q", c.Message)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonDriftUnrepairable, waitTimeout)
	if n := topic(t, name).partitions; n != 5 {
		t.Errorf("want partitions never shrunk (5), got %d", n)
	}
	patch(t, b, `{"spec":{"parameters":{"partitions":"5"}}}`)
	waitCondition(t, b, v1.ConditionParameterDrift, metav1.ConditionFalse, "", waitTimeout)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

func fmtMap(m map[string]string) string {
	var b strings.Builder
	for k, v := range m {
		b.WriteString(k + "=" + v + " ")
	}
	return b.String()
}
