package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestBackendParameterDefaults (#52), on the broker: a topic that sets
// nothing gets the backend's defaults (and counts them against the
// namespace's disk budget), records them in status.parameterDefaults,
// shows the spec merged over them in status.effectiveParameters (a
// bucket's defaulted quota in kubectl get's QUOTA column too),
// keeps them when the platform changes a default, and takes the new one
// only from a backend that converges its defaults; a namespace labelled
// for a larger budget gets it from the controller too, and a floor and a
// denied key that got past admission are refused by the controller.
func TestBackendParameterDefaults(t *testing.T) {
	needInfra(t)
	defaults := func(retentionMs string) map[string]string {
		return map[string]string{"partitions": "2", "config.retention.ms": retentionMs,
			"config.retention.bytes": "1048576", "config.segment.bytes": "1048576"}
	}
	backend := func(retentionMs string, converge bool) string {
		k := sharedKafka("kafka")
		k.Parameters = defaults(retentionMs)
		k.ConvergeParameters = converge
		k.Limits = &config.Limits{
			DiskBytes:        drivers.ByteSize{Bytes: 9 << 20},
			ParameterMin:     map[string]int64{"config.segment.ms": 60000},
			DeniedParameters: []string{"config.flush.*"},
			Namespaces: []config.NamespaceLimits{{
				Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
				DiskBytes: &drivers.ByteSize{Bytes: 64 << 20},
			}},
		}
		s := harness.S3("s3", sharedS3())
		s.Parameters = map[string]string{"quota": "3Mi"}
		return harness.ConfigYAML(k, s)
	}
	ns, gold := namespace(t), namespace(t)
	// Each controller deletes what the test leaves while it runs (cleanups
	// run last-in first-out): the first to run finds it all, the others
	// nothing.
	start := func(yaml string) *controllerRun {
		r := startController(t, yaml, nil, time.Hour)
		removeWhileRunning(t, ns)
		removeWhileRunning(t, gold)
		return r
	}
	run := start(backend("3600000", false))

	plain := budgetTopic(ns, "plain", 0, "")
	plain.Spec.Parameters = nil
	create(t, plain)
	waitCondition(t, plain, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	got := topic(t, plain.Spec.Name)
	if got.partitions != 2 || got.dynamic["retention.ms"] != "3600000" || got.dynamic["retention.bytes"] != "1048576" {
		t.Fatalf("a topic that sets nothing: want the defaults (2 partitions, retention.ms 3600000, retention.bytes 1048576), got %d partitions, %v", got.partitions, got.dynamic)
	}
	if pd := getBuckety(t, ns, plain.Name).Status.ParameterDefaults; pd["config.retention.ms"] != "3600000" || len(pd) != 4 {
		t.Errorf("want status.parameterDefaults to record the 4 defaults, got %v", pd)
	}
	wantEffective(t, plain, defaults("3600000"))
	effectiveQuotaShown(t, ns)

	// 2 partitions × 2 MiB = 4 MiB counted: a 16 MiB topic does not fit
	// the backend's 9 MiB, and fits the 64 MiB of a namespace labelled
	// tier=gold. (9, not 8: plain and fresh take 8, and plain's
	// max.message.bytes below counts 2 × 200000 more.)
	big := func(ns, name string) *v1.Buckety {
		b := budgetTopic(ns, name, 4, "2097152")
		b.Spec.Parameters["config.segment.bytes"] = "2097152"
		return b
	}
	over := big(ns, "big")
	create(t, over)
	if c := waitCondition(t, over, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout); !strings.Contains(c.Message, "it uses 4Mi and asks for 16Mi more, over its budget of 9Mi") || !strings.Contains(c.Message, "(limits.diskBytes)") {
		t.Errorf("want the defaulted topic's 4 MiB counted, with the numbers, got %q", c.Message)
	}
	nsObj := &corev1.Namespace{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: gold}, nsObj); err != nil {
		t.Fatal(err)
	}
	patch(t, nsObj, `{"metadata":{"labels":{"tier":"gold"}}}`)
	inGold := big(gold, "big")
	create(t, inGold)
	waitCondition(t, inGold, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	wantEffective(t, inGold, map[string]string{"partitions": "4", "config.retention.ms": "3600000",
		"config.retention.bytes": "2097152", "config.segment.bytes": "2097152"})
	if pd := inGold.Status.ParameterDefaults; pd["partitions"] != "2" || len(pd) != 4 {
		t.Errorf("a topic that overrides defaults: want status.parameterDefaults to keep all 4 (partitions 2), got %v", pd)
	}

	// What got past admission (no webhook runs here) is refused by the
	// controller, with the numbers and the config key.
	fast := budgetTopic(ns, "fast", 0, "")
	fast.Spec.Parameters = map[string]string{"config.segment.ms": "1"}
	create(t, fast)
	if c := waitCondition(t, fast, v1.ConditionReady, metav1.ConditionFalse, "", waitTimeout); !strings.Contains(c.Message, "allows at least 60000 (limits.parameterMin.config.segment.ms") {
		t.Errorf("segment.ms 1: want the floor named, got %q", c.Message)
	}
	flush := budgetTopic(ns, "flush", 0, "")
	flush.Spec.Parameters = map[string]string{"config.flush.messages": "1"}
	create(t, flush)
	if c := waitCondition(t, flush, v1.ConditionReady, metav1.ConditionFalse, "", waitTimeout); !strings.Contains(c.Message, `limits.deniedParameters: "config.flush.*"`) {
		t.Errorf("flush.messages: want the deny list named, got %q", c.Message)
	}

	// The platform lowers the default: a new topic gets it, the existing
	// one keeps what it was provisioned with (a pass that applies an edit
	// of its own shows the controller looked).
	run.stop(t)
	run = start(backend("7200000", false))
	fresh := budgetTopic(ns, "fresh", 0, "")
	fresh.Spec.Parameters = nil
	create(t, fresh)
	waitCondition(t, fresh, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if got := topic(t, fresh.Spec.Name).dynamic["retention.ms"]; got != "7200000" {
		t.Errorf("a topic created after the change: want retention.ms 7200000, got %q", got)
	}
	applied := func(b *v1.Buckety, key, topicKey, value string) {
		t.Helper()
		patch(t, b, fmt.Sprintf(`{"spec":{"parameters":{%q:%q}}}`, key, value))
		wait.For(t, waitTimeout, key+" applied", func() (bool, string) {
			got := topic(t, b.Spec.Name).dynamic[topicKey]
			return got == value, got
		})
	}
	applied(plain, "config.max.message.bytes", "max.message.bytes", "100000")
	if got := topic(t, plain.Spec.Name).dynamic["retention.ms"]; got != "3600000" {
		t.Errorf("converge off: want the existing topic to keep retention.ms 3600000, got %q", got)
	}
	edited := defaults("3600000")
	edited["config.max.message.bytes"] = "100000"
	wantEffective(t, plain, edited)

	run.stop(t)
	start(backend("7200000", true))
	applied(plain, "config.max.message.bytes", "max.message.bytes", "200000")
	wait.For(t, waitTimeout, "the converged default", func() (bool, string) {
		got := topic(t, plain.Spec.Name).dynamic["retention.ms"]
		return got == "7200000", got
	})
	// The status is written at the end of the pass that changed the
	// topic, once its access has caught up with the generation: wait for it.
	wait.For(t, waitTimeout, "converge on: status.parameterDefaults records the new default", func() (bool, string) {
		pd := getBuckety(t, ns, plain.Name).Status.ParameterDefaults
		return pd["config.retention.ms"] == "7200000", fmt.Sprint(pd)
	})
	converged := defaults("7200000")
	converged["config.max.message.bytes"] = "200000"
	wantEffective(t, plain, converged)
}

// wantEffective waits until b's status.effectiveParameters are want (the
// status is written at the end of the pass that applied them), leaving
// the status read in b.
func wantEffective(t *testing.T, b *v1.Buckety, want map[string]string) {
	t.Helper()
	wait.For(t, waitTimeout, "status.effectiveParameters of "+b.Name, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return false, err.Error()
		}
		return maps.Equal(b.Status.EffectiveParameters, want), fmt.Sprintf("want %v, got %v", want, b.Status.EffectiveParameters)
	})
}

// effectiveQuotaShown: a bucket that writes no quota, on a backend whose
// default gives one, shows it in status.effectiveParameters and in the
// QUOTA column the API server prints for kubectl get (a server-side
// Table, as kubectl asks for); one that writes its own shows its own.
func effectiveQuotaShown(t *testing.T, ns string) {
	t.Helper()
	for _, c := range []struct{ name, quota, want string }{{"defaulted", "", "3Mi"}, {"own", "2Mi", "2Mi"}} {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns},
			Spec: v1.BucketySpec{Backend: "s3", Name: ns + "-" + c.name, RetentionPolicy: v1.RetentionDelete}}
		if c.quota != "" {
			b.Spec.Parameters = map[string]string{"quota": c.quota}
		}
		create(t, b)
		waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		if got := b.Status.EffectiveParameters; !maps.Equal(got, map[string]string{"quota": c.want}) {
			t.Errorf("bucket %s: want status.effectiveParameters quota %s, got %v", c.name, c.want, got)
		}
		if got := printerColumn(t, b, "Quota"); got != c.want {
			t.Errorf("bucket %s: want the QUOTA column %q, got %q", c.name, c.want, got)
		}
	}
}

// printerColumn is the cell of column name in the row the API server
// prints for b: the Table kubectl get asks for, from the CRD's
// additionalPrinterColumns.
func printerColumn(t *testing.T, b *v1.Buckety, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().
		AbsPath("/apis", v1.GroupVersion.Group, v1.GroupVersion.Version, "namespaces", b.Namespace, "bucketies", b.Name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the Table of Buckety %s: %v", b.Name, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("the Table of Buckety %s: %v", b.Name, err)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("the Table of Buckety %s: want 1 row, got %d", b.Name, len(table.Rows))
	}
	for i, col := range table.ColumnDefinitions {
		if col.Name == name && i < len(table.Rows[0].Cells) {
			if cell := table.Rows[0].Cells[i]; cell != nil {
				return fmt.Sprint(cell)
			}
			return ""
		}
	}
	t.Fatalf("the Table of Buckety %s: no column %s in %+v", b.Name, name, table.ColumnDefinitions)
	return ""
}
