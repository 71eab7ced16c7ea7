package integration

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// waitTimeout is the backstop of the suite's waits for a condition that
// must come true: it ends a hung test and is no speed goal. What takes a
// second on an idle machine can take tens on a loaded 2-core one (the
// first make test on a fresh machine builds beside it), so it is minutes.
// A test that must tell one mechanism from a slower one (a release from a
// backoff, a re-check from an hourly one) makes the slower one slower than
// this, rather than bounding the faster one in seconds.
const waitTimeout = 2 * time.Minute

func keysOf(m map[string][]byte) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestFirstReconcileStampsStickyFields: the template resolves once, the
// sticky fields are stamped, the topic has the parameters, and later label
// changes do not rename anything.
func TestFirstReconcileStampsStickyFields(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	b := &v1.Buckety{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns, Labels: map[string]string{"yolean.se/generation": "003"}},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}.v${label['yolean.se/generation']}.${backend.zone}",
			Parameters:    map[string]string{"partitions": "3", "config.retention.ms": "604800000"},
			DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "orders-topic"}},
	}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonReconciled, waitTimeout)
	want := ns + ".orders.v003.local"
	if b.Status.BackendResourceName != want || b.Status.Backend != "kafka" || b.Status.Driver != "kadm" || b.Status.DriverMajor == nil || *b.Status.DriverMajor != 0 ||
		b.Status.DriverBuildVersion != kadmdriver.New().Version().String() || b.Status.Provenance != v1.ProvenanceCreated || b.Status.ObservedGeneration != b.Generation {
		t.Fatalf("want stamped status for %s, got %+v", want, b.Status)
	}
	for _, typ := range []string{v1.ConditionReady, v1.ConditionReconciling, v1.ConditionBackendUnavailable, v1.ConditionDriverVersionIncompatible, v1.ConditionParameterDrift, v1.ConditionBlockedByAccesses, v1.ConditionScopingNotImplemented} {
		found := false
		for _, c := range b.Status.Conditions {
			found = found || c.Type == typ
		}
		if !found {
			t.Errorf("want condition %s on the object, got %s", typ, condString(b.Status.Conditions))
		}
	}
	if info := topic(t, want); !info.exists || info.partitions != 3 || info.dynamic["retention.ms"] != "604800000" {
		t.Fatalf("want topic %s with 3 partitions and retention.ms, got %+v", want, info)
	}
	patch(t, b, `{"metadata":{"labels":{"yolean.se/generation":"004"}}}`)
	patch(t, b, `{"spec":{"parameters":{"partitions":"4"}}}`)
	wait.For(t, waitTimeout, "partitions grown on the original topic", func() (bool, string) {
		info := topic(t, want)
		return info.partitions == 4, "partitions " + string(rune('0'+info.partitions))
	})
	b = getBuckety(t, ns, "orders")
	if b.Status.BackendResourceName != want {
		t.Errorf("want the resolved name frozen as %s, got %s", want, b.Status.BackendResourceName)
	}
	if info := topic(t, ns+".orders.v004.local"); info.exists {
		t.Errorf("a label change must not create another topic")
	}
}

// TestSecretKeysPerDriver: each driver's Secret has exactly its documented
// flat keys, is Opaque, labelled, and owned by the access; the values work.
func TestSecretKeysPerDriver(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	kb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}-events", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "events-topic"}}}
	sb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: ns},
		Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-files", Parameters: map[string]string{"versioning": "true"}, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "files-bucket"}}}
	create(t, kb)
	create(t, sb)
	waitCondition(t, kb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, sb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	ks := secret(t, ns, "events-topic")
	if got := keysOf(ks.Data); got != "bootstrap,topic" {
		t.Errorf("kadm Secret keys: want bootstrap,topic, got %s", got)
	}
	if string(ks.Data["topic"]) != ns+"-events" || string(ks.Data["bootstrap"]) != strings.Join(broker.Addrs, ",") {
		t.Errorf("kadm Secret values: got %q", ks.Data)
	}
	ss := secret(t, ns, "files-bucket")
	if got := keysOf(ss.Data); got != "accessKeyID,bucket,endpoint,region,secretAccessKey" {
		t.Errorf("s3 Secret keys: want accessKeyID,bucket,endpoint,region,secretAccessKey, got %s", got)
	}
	for _, s := range []*corev1.Secret{ks, ss} {
		if s.Type != corev1.SecretTypeOpaque || s.Labels[v1.ManagedByLabel] != "buckety" || s.Labels[v1.AccessLabel] == "" || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "BucketyAccess" {
			t.Errorf("Secret %s: want Opaque, labelled and owned by its BucketyAccess, got type %s labels %v owners %v", s.Name, s.Type, s.Labels, s.OwnerReferences)
		}
	}
	produceConsume(t, string(ks.Data["bootstrap"]), string(ks.Data["topic"]), "hello")
	putGet(t, ss.Data, "k/v.txt", "hello")

	// ScopingNotImplemented: s3 keys are the backend's own.
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: ns}}
	waitCondition(t, a, v1.ConditionScopingNotImplemented, metav1.ConditionTrue, v1.ReasonCredentialsNotScoped, waitTimeout)

	// Secret drift is repaired: edited, then deleted by hand.
	patch(t, ks, `{"stringData":{"topic":"tampered"}}`)
	wait.For(t, waitTimeout, "edited Secret repaired", func() (bool, string) {
		s := secret(t, ns, "events-topic")
		return string(s.Data["topic"]) == ns+"-events", string(s.Data["topic"])
	})
	if err := k8s.Delete(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "deleted Secret recreated", func() (bool, string) {
		s := &corev1.Secret{}
		err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "events-topic"}, s)
		return err == nil && string(s.Data["topic"]) == ns+"-events", "not yet"
	})
}
