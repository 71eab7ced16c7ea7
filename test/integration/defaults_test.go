package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			DiskBytes:        drivers.ByteSize{Bytes: 8 << 20},
			ParameterMin:     map[string]int64{"config.segment.ms": 60000},
			DeniedParameters: []string{"config.flush.*"},
			Namespaces: []config.NamespaceLimits{{
				Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
				DiskBytes: &drivers.ByteSize{Bytes: 64 << 20},
			}},
		}
		return harness.ConfigYAML(k)
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

	// 2 partitions × 2 MiB = 4 MiB counted: a 16 MiB topic does not fit
	// the backend's 8 MiB, and fits the 64 MiB of a namespace labelled
	// tier=gold.
	big := func(ns, name string) *v1.Buckety {
		b := budgetTopic(ns, name, 4, "2097152")
		b.Spec.Parameters["config.segment.bytes"] = "2097152"
		return b
	}
	over := big(ns, "big")
	create(t, over)
	if c := waitCondition(t, over, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout); !strings.Contains(c.Message, "it uses 4Mi and asks for 16Mi more, over its budget of 8Mi") || !strings.Contains(c.Message, "(limits.diskBytes)") {
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

	run.stop(t)
	start(backend("7200000", true))
	applied(plain, "config.max.message.bytes", "max.message.bytes", "200000")
	wait.For(t, waitTimeout, "the converged default", func() (bool, string) {
		got := topic(t, plain.Spec.Name).dynamic["retention.ms"]
		return got == "7200000", got
	})
	if pd := getBuckety(t, ns, plain.Name).Status.ParameterDefaults; pd["config.retention.ms"] != "7200000" {
		t.Errorf("converge on: want status.parameterDefaults to record the new default, got %v", pd)
	}
}
