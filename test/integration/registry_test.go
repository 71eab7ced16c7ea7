package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/Yolean/buckety-controller/drivers"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestOwnerRegistryDeletedRecordsComeBack (kafka): the owner registry
// topic is deleted while a Buckety holds its topic (by hand, or with a
// cluster reset), and every record with it. The controller's drift sweep
// finds the registry created again and has the Buckety write its record
// again at once. It used to wait for the Buckety's periodic pass (an hour
// here, 6 h by default where the sweep sees all drift), during which
// another installation whose tenant holds both adoption keys could adopt
// the topic.
func TestOwnerRegistryDeletedRecordsComeBack(t *testing.T) {
	needInfra(t)
	br := kafka.Start(t, kafka.Options{})
	cfg := kadmdriver.Config{SeedBrokers: br.Addrs, RequestTimeout: harness.Duration(5 * time.Second)}
	startControllerWith(t, installationYAML("east", harness.Kadm("kafka", cfg)), nil, fastLoops)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	topic := ns + ".orders"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: topic}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	ctx := context.Background()
	reader := registryReader(t, "kafka", &cfg)
	eastsRecord := func(what string) {
		t.Helper()
		wait.For(t, waitTimeout, what, func() (bool, string) {
			got, err := reader.ReadOwner(ctx, drivers.Resource{Name: topic})
			cur := getBuckety(t, ns, "orders")
			return err == nil && got != nil && got.Installation == "east" && got.Namespace == ns && got.Name == "orders", fmt.Sprintf("record %v %v; the Buckety: %s", got, err, condString(cur.Status.Conditions))
		})
	}
	eastsRecord("east's owner record of " + topic)

	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, kadmdriver.DefaultOwnerRegistryTopic)
	if err != nil || resp[kadmdriver.DefaultOwnerRegistryTopic].Err != nil {
		t.Fatalf("delete the owner registry: %v %v", err, resp[kadmdriver.DefaultOwnerRegistryTopic].Err)
	}
	deleted := time.Now()
	eastsRecord("east's owner record of " + topic + " written again after the registry was deleted")
	t.Logf("figure: the record back %s after the registry was deleted (drift sweep every 1s, re-check every hour)", time.Since(deleted).Round(time.Millisecond))
}

// registryReader is a kadm backend of its own on cfg, named backend, to
// read the owner records as another process would.
func registryReader(t *testing.T, backend string, cfg *kadmdriver.Config) drivers.OwnerRecorder {
	t.Helper()
	reader, err := (&kadmdriver.Driver{}).Open(context.Background(), backend, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reader.Close(); err != nil {
			t.Error(err)
		}
	})
	return reader.(drivers.OwnerRecorder)
}
