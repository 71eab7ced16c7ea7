package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestMechanismChangeSetsThePasswordBeforeTheSecretNamesIt: the operator
// changes credentials.mechanism from SCRAM-SHA-512 to SCRAM-SHA-256 and
// restarts the controller. The access's first pass must not trust the
// user (issued with SCRAM-SHA-512 only) and write the new mechanism into
// the Secret: a workload reading it then could not log in until the
// credential sweep came round (in this test it never runs). When the
// Secret first names SCRAM-SHA-256, its password logs in with it, the
// password is the one the Secret held, and the old mechanism is refused.
func TestMechanismChangeSetsThePasswordBeforeTheSecretNamesIt(t *testing.T) {
	needInfra(t)
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true})
	run := startController(t, harness.ConfigYAML(superuserBackend(b, 0)), nil, time.Hour)
	ns := namespace(t)
	topic := ns + ".ledger"
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: topic,
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "ledger"}}})
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	before := secret(t, ns, "ledger").Data
	if err := produceWith(t, before, topic); err != nil {
		t.Fatalf("before the change: want the Secret to work over SCRAM-SHA-512, got %v", err)
	}
	run.stop(t)

	be := harness.Kadm("kafka", kadmdriver.Config{SeedBrokers: []string{b.Bootstrap()}, RequestTimeout: harness.Duration(5 * time.Second),
		SASL:        &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"},
		Credentials: &kadmdriver.Credentials{Mechanism: "SCRAM-SHA-256"}})
	startController(t, harness.ConfigYAML(be), nil, time.Hour)
	removeWhileRunning(t, ns)
	var after map[string][]byte
	wait.For(t, waitTimeout, "the Secret names SCRAM-SHA-256", func() (bool, string) {
		after = secret(t, ns, "ledger").Data
		return string(after["sasl.mechanism"]) == "SCRAM-SHA-256", string(after["sasl.mechanism"])
	})
	// Checked once, at once: the Secret must never name a mechanism its
	// password is not set for on the broker.
	if err := produceAs(after, topic); err != nil {
		t.Errorf("the Secret names SCRAM-SHA-256: want its password to log in with it, got %v", err)
	}
	if string(after["sasl.password"]) != string(before["sasl.password"]) || string(after["sasl.username"]) != string(before["sasl.username"]) {
		t.Error("want the access's user and password kept through a change of mechanism: only the mechanism changes")
	}
	if err := produceWith(t, before, topic); err == nil {
		t.Error("after the change: want the password refused over SCRAM-SHA-512, got a login")
	}
}

// produceAs writes one record to topic as a workload with nothing but the
// Secret data would, with whatever mechanism the data names.
func produceAs(data map[string][]byte, topic string) error {
	cl, err := kafka.SecretClient(data)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}
