package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/Yolean/buckety-controller/drivers"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestOwnerRegistryDeletedRetainedRecordComesBack (kafka): Buckety
// archive is deleted with retentionPolicy Retain; its topic stays, held
// by its retained claim, and its owner record says retained. The owner
// registry topic is then deleted (by hand, or with a cluster reset), and
// the record with it. No Buckety is left to write it again, so the drift
// sweep does: it finds the registry created again and writes the record
// it read there before, retained. Before, the topic stayed without a
// record, and looked unowned to every other installation on the broker,
// which could adopt it, and its data.
func TestOwnerRegistryDeletedRetainedRecordComesBack(t *testing.T) {
	needInfra(t)
	const backend = "kafka-retained"
	br := kafka.Start(t, kafka.Options{})
	cfg := kadmdriver.Config{SeedBrokers: br.Addrs, RequestTimeout: harness.Duration(5 * time.Second)}
	startControllerWith(t, installationYAML("east", harness.Kadm(backend, cfg)), nil, fastLoops)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	topic := ns + ".archive"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "archive", Namespace: ns},
		Spec: v1.BucketySpec{Backend: backend, Name: topic, RetentionPolicy: v1.RetentionRetain}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	uid := string(b.UID)
	deleteOn(t, k8s, b)

	ctx := context.Background()
	reader := registryReader(t, backend, &cfg)
	retained := func(what string) {
		t.Helper()
		wait.For(t, waitTimeout, what, func() (bool, string) {
			got, err := reader.ReadOwner(ctx, drivers.Resource{Name: topic})
			ok := err == nil && got != nil && got.Installation == "east" && got.Namespace == ns && got.Name == "archive" && got.UID == uid && got.State == drivers.OwnerRetained
			return ok, fmt.Sprintf("record %v %v", got, err)
		})
	}
	retained("east's record of " + topic + " retained")
	if cl, ok := claimOn(t, backend, topic); !ok || !claims.IsRetained(cl) {
		t.Fatalf("want the claim on %s retained, got %+v", topic, cl)
	}
	// Two sweeps after the claim and the record are both there: the
	// controller has read the record as its retained resource's.
	sweeps := sweepsOf(t, backend)
	wait.For(t, waitTimeout, "two drift sweeps of "+backend, func() (bool, string) {
		n := sweepsOf(t, backend)
		return n >= sweeps+2, fmt.Sprintf("%v sweeps, from %v", n, sweeps)
	})

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
	retained("east's record of " + topic + " written again, retained, after the registry was deleted")
	t.Logf("figure: the retained record back %s after the registry was deleted (drift sweep every 1s)", time.Since(deleted).Round(time.Millisecond))
	if !topicOn(t, br.Addrs, topic) {
		t.Errorf("want %s kept", topic)
	}
}

// sweepsOf reads how many drift sweeps of backend ended well, from the
// controller-runtime registry (the in-process controller's).
func sweepsOf(t *testing.T, backend string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.(prometheus.Gatherer).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "buckety_drift_sweeps_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var be, result string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "backend":
					be = lp.GetValue()
				case "result":
					result = lp.GetValue()
				}
			}
			if be == backend && result == "ok" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
