package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestBackendViewRegistryNotCompacted: a kadm backend whose owner registry
// was created by hand with cleanup.policy delete answers its probes and
// serves, so its BucketyBackend is Ready True (Reachable), its
// keysPerAccess is read (the Issuing read a failed probe skips), and the
// registry shows as Degraded True, reason RegistryNotCompacted, with the
// kafka-configs command that fixes it, in the DEGRADED column kubectl get
// prints and in buckety_backend_degraded, while buckety_backend_up stays 1.
// It used to turn Ready False (ProbeFailed), with no keysPerAccess, and
// fire BucketyBackendDown as if the backend did not answer.
func TestBackendViewRegistryNotCompacted(t *testing.T) {
	needInfra(t)
	ctx := context.Background()
	const interval = 2 * time.Second
	const name = "unsound-registry-kafka"
	topic := fmt.Sprintf("__owners-not-compacted-%d", time.Now().UnixNano())
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker.Addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	policy := "delete"
	resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &policy}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s by hand with cleanup.policy=delete: %v %v", topic, err, resp.Err)
	}
	t.Cleanup(func() {
		if resp, err := adm.DeleteTopics(context.Background(), topic); err != nil || resp[topic].Err != nil {
			t.Errorf("delete %s: %v %v", topic, err, resp[topic].Err)
		}
	})
	t.Cleanup(func() {
		if err := k8s.DeleteAllOf(context.Background(), &v1.BucketyBackend{}); err != nil {
			t.Errorf("delete the BucketyBackends: %v", err)
		}
	})
	kb := harness.Kadm(name, kadmdriver.Config{SeedBrokers: broker.Addrs, RequestTimeout: harness.Duration(5 * time.Second),
		OwnerRegistry: &kadmdriver.OwnerRegistry{Topic: topic}})
	startControllerWith(t, harness.ConfigYAML(kb), nil, func(o *appcontroller.Options) { o.BackendProbe = interval })

	// The first probe's write: Ready is no longer Unknown (NotProbed).
	var bb v1.BucketyBackend
	wait.For(t, waitTimeout, "bucketybackend/"+name+" probed", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, &bb); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(bb.Status.Conditions, v1.ConditionReady)
		return c != nil && c.Status != metav1.ConditionUnknown, condString(bb.Status.Conditions)
	})
	t.Logf("probe %d: %s", bb.Status.Probes, condString(bb.Status.Conditions))
	if c := meta.FindStatusCondition(bb.Status.Conditions, v1.ConditionReady); c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonReachable {
		t.Errorf("want Ready True %s (the backend serves), got %s %s: %s", v1.ReasonReachable, c.Status, c.Reason, c.Message)
	}
	d := meta.FindStatusCondition(bb.Status.Conditions, v1.ConditionDegraded)
	if d == nil || d.Status != metav1.ConditionTrue || d.Reason != kadmdriver.ReasonRegistryNotCompacted {
		t.Errorf("want Degraded True %s, got %+v", kadmdriver.ReasonRegistryNotCompacted, d)
	}
	for _, want := range []string{"owner registry " + topic, "cleanup.policy=delete",
		"kafka-configs --alter --entity-type topics --entity-name " + topic + " --add-config cleanup.policy=compact"} {
		if d == nil || !strings.Contains(d.Message, want) {
			t.Errorf("want the Degraded message to say %q, got %+v", want, d)
		}
	}
	// The config has no sasl: the backend's own credentials for every
	// access, which only the Issuing read tells.
	if bb.Status.KeysPerAccess == nil || *bb.Status.KeysPerAccess {
		t.Errorf("want keysPerAccess false from the Issuing read of a backend that serves, got %v", bb.Status.KeysPerAccess)
	}
	if reason, up := backendUp(t, name); reason != v1.ReasonReachable || up != 1 {
		t.Errorf("want buckety_backend_up{reason=%q} 1, got {reason=%q} %v", v1.ReasonReachable, reason, up)
	}
	if labels, m := series(t, metrics.BackendDegraded, name); m == nil || labels["reason"] != kadmdriver.ReasonRegistryNotCompacted || m.GetGauge().GetValue() != 1 {
		t.Errorf("want buckety_backend_degraded{reason=%q} 1, got %v %v", kadmdriver.ReasonRegistryNotCompacted, labels, m)
	}
	row := backendTableRow(t, name)
	for col, want := range map[string]string{"Ready": "True", "Reason": v1.ReasonReachable, "Degraded": "True"} {
		if row[col] != want {
			t.Errorf("kubectl get bucketybackend: want column %s %q, got %q (row %v)", col, want, row[col], row)
		}
	}
}

// backendTableRow is the row the API server prints for
// bucketybackend/name, by column: the Table kubectl get asks for, from
// the CRD's additionalPrinterColumns.
func backendTableRow(t *testing.T, name string) map[string]string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().
		AbsPath("/apis", v1.GroupVersion.Group, v1.GroupVersion.Version, "bucketybackends", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the Table of bucketybackend/%s: %v", name, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("the Table of bucketybackend/%s: %v", name, err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("the Table of bucketybackend/%s: want 1 row, got %d", name, len(table.Rows))
	}
	row := map[string]string{}
	for i, col := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) && table.Rows[0].Cells[i] != nil {
			row[col.Name] = fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	return row
}
