package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
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
	run := startController(t, harness.ConfigYAML(kadmWithMechanism("kafka", b, "")), nil, time.Hour)
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

	startController(t, harness.ConfigYAML(kadmWithMechanism("kafka", b, "SCRAM-SHA-256")), nil, time.Hour)
	removeWhileRunning(t, ns)
	movedToSHA256(t, ns, topic, before)
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

// kadmWithMechanism is backend name on b as superuserBackend has it, its
// users' passwords set for mech ("" for the default, SCRAM-SHA-512).
func kadmWithMechanism(name string, b *kafka.Broker, mech string) config.Backend {
	c := kadmdriver.Config{SeedBrokers: []string{b.Bootstrap()}, RequestTimeout: harness.Duration(5 * time.Second),
		SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}}
	if mech != "" {
		c.Credentials = &kadmdriver.Credentials{Mechanism: mech}
	}
	return harness.Kadm(name, c)
}

// TestMechanismChangeOnOneOfTwoBackends: two kadm backends, and the
// mechanism changed on the second only. The start's read of every buckety
// Secret judged each Secret by the first backend's mechanism (the Secret
// names no backend, and both issue under the same keys): the second
// backend's Secrets, naming the old mechanism, passed for current and
// were trusted, and the Secret named the new mechanism before its
// password was set for it. A Secret any backend of its keys finds stale
// is read on its own, and judged by its own backend.
func TestMechanismChangeOnOneOfTwoBackends(t *testing.T) {
	needInfra(t)
	sasl := kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true}
	a, b := kafka.Start(t, sasl), kafka.Start(t, sasl)
	run := startController(t, harness.ConfigYAML(kadmWithMechanism("kafka-a", a, ""), kadmWithMechanism("kafka-b", b, "")), nil, time.Hour)
	ns := namespace(t)
	topic := ns + ".ledger"
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka-b", Name: topic,
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "ledger"}}})
	acc := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}}
	waitCondition(t, acc, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	before := secret(t, ns, "ledger").Data
	run.stop(t)

	startController(t, harness.ConfigYAML(kadmWithMechanism("kafka-a", a, ""), kadmWithMechanism("kafka-b", b, "SCRAM-SHA-256")), nil, time.Hour)
	removeWhileRunning(t, ns)
	movedToSHA256(t, ns, topic, before)
}

// movedToSHA256 waits until Secret ledger of ns names SCRAM-SHA-256, and
// checks at once that its password logs in with it to write topic, and
// that the user and password are before's: the Secret must never name a
// mechanism its password is not set for on the broker.
func movedToSHA256(t *testing.T, ns, topic string, before map[string][]byte) {
	t.Helper()
	var after map[string][]byte
	wait.For(t, waitTimeout, "the Secret names SCRAM-SHA-256", func() (bool, string) {
		after = secret(t, ns, "ledger").Data
		return string(after["sasl.mechanism"]) == "SCRAM-SHA-256", string(after["sasl.mechanism"])
	})
	if err := produceAs(after, topic); err != nil {
		t.Errorf("the Secret names SCRAM-SHA-256: want its password to log in with it, got %v", err)
	}
	if string(after["sasl.password"]) != string(before["sasl.password"]) || string(after["sasl.username"]) != string(before["sasl.username"]) {
		t.Error("want the access's user and password kept through a change of mechanism: only the mechanism changes")
	}
}

// TestMechanismChangeWithAnUnwritableSecretIsPaced: after a change of
// mechanism, an access whose Secret cannot be written (made immutable)
// sets its password for the new mechanism, and every retry of the
// failing write did so again: a broker write, and PBKDF2, each pass. It
// is paced as a credential issued again for a Secret that does not hold
// it: once at once, then after a wait.
func TestMechanismChangeWithAnUnwritableSecretIsPaced(t *testing.T) {
	needInfra(t)
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, CountRequests: true})
	run := startController(t, harness.ConfigYAML(kadmWithMechanism("kafka", b, "")), nil, time.Hour)
	ns := namespace(t)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".ledger",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "ledger"}}})
	acc := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}}
	waitCondition(t, acc, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	run.stop(t)
	s := secret(t, ns, "ledger")
	immutable := true
	s.Immutable = &immutable
	if err := k8s.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	scram := func() int64 {
		got, err := b.Requests()
		if err != nil {
			t.Fatal(err)
		}
		return got["AlterUserSCRAMCredentials"]
	}
	before := scram()
	startController(t, harness.ConfigYAML(kadmWithMechanism("kafka", b, "SCRAM-SHA-256")), nil, time.Hour)
	t.Cleanup(func() {
		// An immutable Secret is deleted, not updated, by the namespace's
		// cleanup.
		if err := k8s.Delete(context.Background(), s); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete Secret ledger: %v", err)
		}
	})
	removeWhileRunning(t, ns)
	wait.For(t, waitTimeout, "the password set for the new mechanism", func() (bool, string) {
		n := scram() - before
		return n >= 1, fmt.Sprint(n)
	})
	// One assert (the new mechanism's password, the old one's removal).
	time.Sleep(time.Second)
	once := scram() - before
	// Well inside the 10 s wait before a second: a write retried at the
	// controller's backoff would have set it many times by then.
	time.Sleep(5 * time.Second)
	if n := scram() - before; n != once {
		t.Errorf("a Secret that cannot be written, after a change of mechanism: want the password set once (%d SCRAM writes), then paced; got %d SCRAM writes", once, n)
	}
}
