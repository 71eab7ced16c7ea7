package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/Yolean/buckety-controller/drivers"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestTopicCreatedAgainOutOfBandIsNotTaken on the real broker (SCRAM and
// ACLs enforced) and control plane: a Buckety's topic (retentionPolicy
// Delete), with an access holding a SCRAM user of its own, is deleted out
// of band and someone else creates a topic of the same name and writes to
// it. The controller used to converge that topic at the Buckety's next
// pass, and delete it, with its data, when the Buckety was deleted: the
// name was all it knew of its topic. The owner record carries the topic's
// ID: the Buckety goes not Ready, ResourceReplaced (it was a plain backend
// error, under which the access kept its user and ACLs on the name, and
// reached the stranger's topic), the access's user is revoked, the
// stranger's topic keeps its configs and records. Once that topic is
// deleted the Buckety creates its own again and the access gets a new
// user; replaced once more, the Buckety's deletion (retentionPolicy
// Delete) finishes as Retain would, with a Warning, the topic left in
// place.
func TestTopicCreatedAgainOutOfBandIsNotTaken(t *testing.T) {
	needInfra(t)
	br, cfg := scopedBroker(t, 0)
	startController(t, cfg, nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	name := ns + ".orders"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name,
		RetentionPolicy: v1.RetentionDelete, Parameters: map[string]string{"config.retention.ms": "604800000"}}}
	create(t, b)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}}
	create(t, a)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	copied := secret(t, ns, "app").Data
	if err := produceWith(t, copied, name); err != nil {
		t.Fatalf("want the access's Secret to produce to %s, got %v", name, err)
	}
	owner := ownerOn(t, br)
	wait.For(t, waitTimeout, "the owner record of "+name+" with its topic ID", func() (bool, string) {
		rec := owner(name)
		return rec != nil && rec.ResourceID != "", fmt.Sprintf("record %+v", rec)
	})

	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs...), kgo.MetadataMinAge(100*time.Millisecond), kgo.SASL(scram.Auth{User: "buckety", Pass: "s3cr3t"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	theirs := func(what string) {
		t.Helper()
		info := topicWith(t, adm, cl, name)
		if !info.exists {
			t.Fatalf("%s: want the stranger's topic kept, it is gone", what)
		}
		if v, ok := info.dynamic["retention.ms"]; ok {
			t.Errorf("%s: want the stranger's topic's configs untouched, got retention.ms %q", what, v)
		}
		if got := topicRecords(t, adm, name); got != 1 {
			t.Errorf("%s: want the stranger's record kept, got %d records", what, got)
		}
	}
	// replace deletes the Buckety's topic out of band, has a stranger
	// create one of the name and write to it, and wakes the Buckety (a
	// change of a mutable field that keeps Delete) with retention.
	replace := func(retention string) {
		t.Helper()
		deleteTopicOutOfBand(t, adm, name)
		if _, err := adm.CreateTopic(ctx, 1, -1, nil, name); err != nil {
			t.Fatal(err)
		}
		// The stranger's own client: one that knew the Buckety's topic
		// would send its old ID.
		stranger, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: "s3cr3t"}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer stranger.Close()
		if err := stranger.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte("theirs")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		patch(t, b, `{"spec":{"parameters":{"config.retention.ms":"`+retention+`"}}}`)
		c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonResourceReplaced, waitTimeout)
		if !strings.Contains(c.Message, "is not the topic buckety holds") || !strings.Contains(c.Message, name) {
			t.Errorf("want the Ready message to say the topic is not the Buckety's, got %q", c.Message)
		}
		waitCondition(t, b, v1.ConditionProvisioned, metav1.ConditionFalse, v1.ReasonResourceReplaced, waitTimeout)
	}
	replace("604800001")
	waitEvent(t, ns, v1.ReasonResourceReplaced, "is not the topic buckety holds")
	// The access's user reached the topic by its name: it is revoked.
	wait.For(t, waitTimeout, "the access's user revoked", func() (bool, string) {
		err := produceWith(t, copied, name)
		return err != nil, "the Secret copied before still produces to the stranger's topic"
	})
	wait.For(t, waitTimeout, "the access's credential record deleted", func() (bool, string) {
		n := len(credentialsOf(t, a.UID))
		return n == 0, fmt.Sprintf("%d records", n)
	})
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionFalse, "", waitTimeout)
	theirs("after the Buckety's pass")

	// The operator finds the stranger's data unwanted and deletes the
	// topic: the Buckety creates its own again, and its access is
	// granted afresh, with a user of its own the old Secret does not hold.
	deleteTopicOutOfBand(t, adm, name)
	patch(t, b, `{"spec":{"parameters":{"config.retention.ms":"604800002"}}}`)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	wait.For(t, waitTimeout, "the access's new Secret producing to the Buckety's new topic", func() (bool, string) {
		err := produceWith(t, secret(t, ns, "app").Data, name)
		return err == nil, fmt.Sprint(err)
	})
	if err := produceWith(t, copied, name); err == nil {
		t.Error("want the Secret copied before the revocation refused, it produces")
	}

	// Replaced once more, then deleted: retentionPolicy Delete, and the
	// topic under the name is not the one the Buckety held: the deletion
	// finishes, leaving it.
	replace("604800003")
	theirs("after the second replacement")
	if err := k8s.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	waitEvent(t, ns, v1.EventRetained, "the deletion finishes as retentionPolicy Retain would")
	theirs("after the Buckety was deleted")
	// Its record is marked retained, still naming the topic it held: a
	// Held record of a Buckety gone would leave the name to no one.
	td, err := adm.ListTopics(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	id := td[name].ID
	strangers := base64.RawURLEncoding.EncodeToString(id[:])
	if rec := owner(name); rec == nil || rec.State != drivers.OwnerRetained || rec.ResourceID == "" || rec.ResourceID == strangers {
		t.Errorf("want the owner record of %s retained with the held topic's ID (not the stranger's %s), got %+v", name, strangers, rec)
	}
}

// ownerOn reads owner records of topics on broker br fresh, as the kadm
// driver keeps them, as the superuser scopedBroker configures.
func ownerOn(t *testing.T, br *kafka.Broker) func(topic string) *drivers.OwnerRecord {
	cfg := kadmdriver.Config{SeedBrokers: br.Addrs, RequestTimeout: harness.Duration(5 * time.Second),
		SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}}
	return func(topic string) *drivers.OwnerRecord { return ownerWith(t, cfg, topic) }
}

// TestAdoptionOverAReplacedRetainedTopicIsRefusedAsReplaced: a Buckety's
// topic is retained (its record marked so, with the topic's ID), its claim
// released, and the topic deleted out of band and created again by someone
// else. A Buckety asking to adopt the name, on a backend that allows it,
// is refused by the driver (the topic is not the one the retained record
// names): that refusal was a plain backend error, retried on the fast
// backoff for ever; it is ResourceReplaced now, as any topic created again
// under a record, with the way out in the message, and the stranger's
// topic keeps its configs and records.
func TestAdoptionOverAReplacedRetainedTopicIsRefusedAsReplaced(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	name := ns + ".orders"
	first := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka-adopt", Name: name}}
	create(t, first)
	waitCondition(t, first, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	ctx := context.Background()
	if err := k8s.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the first Buckety deleted", func() (bool, string) { return gone(t, first) })
	wait.For(t, waitTimeout, "the retained record of "+name+" with its topic ID", func() (bool, string) {
		rec := ownerOf(t, name)
		return rec != nil && rec.State == drivers.OwnerRetained && rec.ResourceID != "", fmt.Sprintf("record %+v", rec)
	})
	// The maintainer releases the retained claim (kubectl delete
	// bucketyclaim), so the name may be adopted.
	cl, ok := claimOn(t, "kafka-adopt", name)
	if !ok {
		t.Fatalf("want the retained claim of %s", name)
	}
	if err := k8s.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	adm, kc := kafkaAdmin(t)
	deleteTopicOutOfBand(t, adm, name)
	legacyTopic(t, name, "theirs")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka-adopt", Name: name,
		Adoption: v1.AdoptionAdopt, Parameters: map[string]string{"partitions": "2", "config.retention.ms": "1000000"}}}
	create(t, b)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonResourceReplaced, waitTimeout)
	if !strings.Contains(c.Message, "is not the topic buckety holds") || !strings.Contains(c.Message, "remove the topic's owner record") {
		t.Errorf("want the Ready message to say the topic is not the record's, and the way out, got %q", c.Message)
	}
	if info := topicWith(t, adm, kc, name); !info.exists || info.dynamic["retention.ms"] != "1000000" || info.partitions != 2 {
		t.Errorf("want the stranger's topic as it was (2 partitions, retention.ms 1000000), got %+v", info)
	}
	if got := records(t, name); got != 1 {
		t.Errorf("want the stranger's record kept, got %d records", got)
	}
}
