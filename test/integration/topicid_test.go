package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestTopicCreatedAgainOutOfBandIsNotTaken on the real broker and control
// plane: a Buckety's topic (retentionPolicy Delete) is deleted out of band
// and someone else creates a topic of the same name and writes to it. The
// controller used to converge that topic at the Buckety's next pass, and
// delete it, with its data, when the Buckety was deleted: the name was all
// it knew of its topic. The owner record carries the topic's ID: the
// Buckety goes not Ready saying so, the stranger's topic keeps its configs
// and records, its deletion is refused, and once the Buckety is set to
// Retain its deletion finishes with the topic left in place.
func TestTopicCreatedAgainOutOfBandIsNotTaken(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	name := ns + ".orders"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name,
		RetentionPolicy: v1.RetentionDelete, Parameters: map[string]string{"config.retention.ms": "604800000"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	wait.For(t, waitTimeout, "the owner record of "+name+" with its topic ID", func() (bool, string) {
		rec := ownerOf(t, name)
		return rec != nil && rec.ResourceID != "", fmt.Sprintf("record %+v", rec)
	})

	ctx := context.Background()
	adm, cl := kafkaAdmin(t)
	deleteTopicOutOfBand(t, adm, name)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, name); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte("theirs")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Wake the Buckety (a change of a mutable field that keeps Delete).
	patch(t, b, `{"spec":{"parameters":{"config.retention.ms":"604800001"}}}`)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBackendError, waitTimeout)
	if !strings.Contains(c.Message, "is not the topic buckety holds") || !strings.Contains(c.Message, name) {
		t.Errorf("want the Ready message to say the topic is not the Buckety's, got %q", c.Message)
	}
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
	theirs("after the Buckety's pass")

	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the deletion refused", func() (bool, string) {
		cur := getBuckety(t, ns, "orders")
		return strings.Contains(condString(cur.Status.Conditions), "is not the topic buckety holds"), condString(cur.Status.Conditions)
	})
	theirs("after the deletion was refused")
	patch(t, b, `{"spec":{"retentionPolicy":"Retain"}}`)
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	theirs("after the Buckety was deleted with Retain")
}
