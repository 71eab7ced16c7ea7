package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestBackendPointedAtAnotherClusterWritesNothingThere on real brokers
// (SCRAM and ACLs enforced) and control plane: a Buckety (retentionPolicy
// Delete, with a default access) is provisioned on cluster A; the
// operator then points the backend's seedBrokers at cluster B (a
// migration, or a typo that reaches staging), where a stranger's topic of
// the same name holds a record under a longer retention.ms. B's owner
// registry knows nothing of this installation, so nothing kept the
// Buckety out: its pass converged the stranger's topic to its own
// retention.ms (deleting the stranger's older data), wrote its owner
// record there, its access got a user and ACLs on B and its Secret
// switched to B, and the deletion deleted the stranger's topic. The
// claim records A's cluster ID: the Buckety goes not Ready,
// ServiceChanged, with a Warning naming both IDs and the way out, the
// stranger's topic keeps its configs and record, no user or ACL is
// written on B, the Secret keeps A's bootstrap, and the deletion
// finishes as retentionPolicy Retain would, leaving B's topic.
func TestBackendPointedAtAnotherClusterWritesNothingThere(t *testing.T) {
	needInfra(t)
	sasl := []string{"SCRAM-SHA-512:buckety:s3cr3t"}
	a := kafka.Start(t, kafka.Options{SASL: sasl, ACLs: true, ClusterID: "cluster-a"})
	bb := kafka.Start(t, kafka.Options{SASL: sasl, ACLs: true, ClusterID: "cluster-b", CountRequests: true})
	ctx := context.Background()
	admOf := func(br *kafka.Broker) (*kadm.Client, *kgo.Client) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: "s3cr3t"}.AsSha512Mechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl), cl
	}
	admA, clA := admOf(a)
	admB, clB := admOf(bb)
	for want, adm := range map[string]*kadm.Client{"cluster-a": admA, "cluster-b": admB} {
		m, err := adm.BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Cluster != want {
			t.Fatalf("want the broker to report cluster ID %s, got %q", want, m.Cluster)
		}
	}
	opts := func(o *appcontroller.Options) { o.RESTConfig, o.Recheck = cp.RESTConfig, time.Hour }
	first := startControllerWith(t, harness.ConfigYAML(superuserBackend(a, 0)), nil, opts)
	ns := namespace(t)
	name := ns + ".orders"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name,
		RetentionPolicy: v1.RetentionDelete, Parameters: map[string]string{"config.retention.ms": "3600000"},
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "orders"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	implicit := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}}
	waitCondition(t, implicit, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	bootstrap := string(secret(t, ns, "orders").Data["bootstrap"])
	if bootstrap != a.Bootstrap() {
		t.Fatalf("want the Secret's bootstrap %s (cluster A), got %s", a.Bootstrap(), bootstrap)
	}
	var claims v1.BucketyClaimList
	if err := k8s.List(ctx, &claims, client.MatchingLabels{v1.ClaimOwnerLabel: string(b.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 1 || claims.Items[0].Spec.ServiceID != "cluster-a" {
		t.Fatalf("want one claim recording serviceID cluster-a, got %+v", claims.Items)
	}
	// A claim of an older release, made before claims recorded their
	// service, records it at its next pass that reads its owner record
	// on A.
	cl := &claims.Items[0]
	patch(t, cl, `{"spec":{"serviceID":null}}`)
	patch(t, b, `{"spec":{"parameters":{"config.retention.ms":"3600001"}}}`)
	wait.For(t, waitTimeout, "the claim stamped with cluster A's ID again", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cl), cl); err != nil {
			return false, err.Error()
		}
		return cl.Spec.ServiceID == "cluster-a", "serviceID " + cl.Spec.ServiceID
	})
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	first.stop(t)

	// A stranger's topic of the name on B, with a day's retention and a
	// record.
	if _, err := admB.CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": kadm.StringPtr("86400000")}, name); err != nil {
		t.Fatal(err)
	}
	if err := clB.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte("theirs")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	theirs := func(what string) {
		t.Helper()
		info := topicWith(t, admB, clB, name)
		if !info.exists {
			t.Fatalf("%s: want the stranger's topic on B kept, it is gone", what)
		}
		if got := info.dynamic["retention.ms"]; got != "86400000" {
			t.Errorf("%s: want the stranger's retention.ms 86400000 untouched, got %q", what, got)
		}
		if got := topicRecords(t, admB, name); got != 1 {
			t.Errorf("%s: want the stranger's record kept, got %d records", what, got)
		}
	}
	writesBefore := userAndACLWrites(t, bb)

	startControllerWith(t, harness.ConfigYAML(superuserBackend(bb, 0)), nil, opts)
	removeWhileRunning(t, ns)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonServiceChanged, waitTimeout)
	for _, want := range []string{"backend kafka", `"cluster-a"`, `"cluster-b"`, `{"spec":{"serviceID":null}}`} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("want the Ready message to name %s, got %q", want, c.Message)
		}
	}
	waitCondition(t, b, v1.ConditionProvisioned, metav1.ConditionFalse, v1.ReasonServiceChanged, waitTimeout)
	waitEvent(t, ns, v1.ReasonServiceChanged, `"cluster-b"`)
	wait.For(t, waitTimeout, "the implicit access waiting, not granted on B", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(implicit), implicit); err != nil {
			return false, err.Error()
		}
		return !meta.IsStatusConditionTrue(implicit.Status.Conditions, v1.ConditionReady), condString(implicit.Status.Conditions)
	})
	waitIdle(t)
	theirs("after the passes on B")
	if got := userAndACLWrites(t, bb) - writesBefore; got != 0 {
		t.Errorf("want no user or ACL written on cluster B, got %d writes", got)
	}
	if got := string(secret(t, ns, "orders").Data["bootstrap"]); got != bootstrap {
		t.Errorf("want the Secret's bootstrap kept at cluster A's %s, got %s", bootstrap, got)
	}
	if err := produceWith(t, secret(t, ns, "orders").Data, name); err != nil {
		t.Errorf("want the Secret kept working on cluster A, got %v", err)
	}

	// Deleted (retentionPolicy Delete): it finishes as Retain would, and
	// B's topic stays.
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	waitEvent(t, ns, v1.EventRetained, "the deletion finishes as retentionPolicy Retain would")
	theirs("after the Buckety was deleted")
	if info := topicWith(t, admA, clA, name); !info.exists {
		t.Error("want the Buckety's topic on cluster A left as it is, it is gone")
	}
}

// TestUpgradedAndRepointedAtOnceIsNotStampedWithTheNewCluster: a claim of
// an older release records no cluster, and the operator rolls the new
// release out together with seedBrokers pointed at cluster B. The first
// pass on B finds no record there and writes one (an older claim cannot
// be told from a new Buckety's); the next read its own record back and
// stamped the claim with B's ID, so that, pointed back at A, the Buckety's
// own topic was refused as ServiceChanged. A record this process wrote
// proves nothing: the claim stays unstamped, and back on A it is Ready.
func TestUpgradedAndRepointedAtOnceIsNotStampedWithTheNewCluster(t *testing.T) {
	needInfra(t)
	sasl := []string{"SCRAM-SHA-512:buckety:s3cr3t"}
	a := kafka.Start(t, kafka.Options{SASL: sasl, ACLs: true, ClusterID: "cluster-a"})
	bb := kafka.Start(t, kafka.Options{SASL: sasl, ACLs: true, ClusterID: "cluster-b"})
	ctx := context.Background()
	opts := func(o *appcontroller.Options) { o.RESTConfig, o.Recheck = cp.RESTConfig, 2*time.Second }
	first := startControllerWith(t, harness.ConfigYAML(superuserBackend(a, 0)), nil, opts)
	ns := namespace(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	var claims v1.BucketyClaimList
	if err := k8s.List(ctx, &claims, client.MatchingLabels{v1.ClaimOwnerLabel: string(b.UID)}); err != nil || len(claims.Items) != 1 {
		t.Fatalf("want one claim, got %v %d", err, len(claims.Items))
	}
	cl := &claims.Items[0]
	first.stop(t)
	// The claim as an older release made it.
	patch(t, cl, `{"spec":{"serviceID":null}}`)

	onB := startControllerWith(t, harness.ConfigYAML(superuserBackend(bb, 0)), nil, opts)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	// Passes that read the record written on B back (the re-check every
	// 2 s), of this process and, after a restart (or a shard moved), of
	// one that did not write it.
	time.Sleep(6 * time.Second)
	onB.stop(t)
	onB = startControllerWith(t, harness.ConfigYAML(superuserBackend(bb, 0)), nil, opts)
	time.Sleep(6 * time.Second)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cl), cl); err != nil {
		t.Fatal(err)
	}
	if cl.Spec.ServiceID != "" {
		t.Errorf("a claim of an older release on a cluster whose record this process wrote: want it unstamped, got serviceID %q", cl.Spec.ServiceID)
	}
	onB.stop(t)
	startControllerWith(t, harness.ConfigYAML(superuserBackend(a, 0)), nil, opts)
	removeWhileRunning(t, ns)
	patch(t, b, `{"metadata":{"annotations":{"touched":"1"}}}`)
	time.Sleep(4 * time.Second)
	if c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout); c.Reason == v1.ReasonServiceChanged {
		t.Errorf("pointed back at A: want Ready, got %s", c.Reason)
	}
}
