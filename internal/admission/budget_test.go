package admission

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

const budgetConfig = `backends:
- name: kafka
  driver: kadm
  config: {seedBrokers: ['kafka:9092']}
  limits: {partitions: 6, diskBytes: 12Mi}
- name: open
  driver: kadm
  service: kafka
  config: {seedBrokers: ['kafka:9092']}
- name: s3
  driver: s3
  config: {implementation: minio, endpoint: 'http://minio:9000', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
  limits: {quotaBytes: 2Gi}
`

// budgetValidators are validators on budgetConfig whose budget counter
// reads existing Bucketies through the webhook cache's transform, as the
// webhook does.
func budgetValidators(t *testing.T, existing ...*v1.Buckety) *Validators {
	t.Helper()
	return validatorsCounting(t, budgetConfig, existing...)
}

// validatorsCounting are validators on the config text whose budget
// counter reads existing through the webhook cache's transform.
func validatorsCounting(t *testing.T, text string, existing ...*v1.Buckety) *Validators {
	t.Helper()
	cfg := webhookConfig(t, text)
	transform := StripBucketyCounting(cfg)
	var objs []client.Object
	for _, b := range existing {
		s, err := transform(b)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, s.(*v1.Buckety))
	}
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	v, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v.WithBudgetCounter(CacheBudgetCounter(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()))
}

func topicOf(ns, name, backend, partitions, retention string) *v1.Buckety {
	p := map[string]string{"partitions": partitions}
	if retention != "" {
		// Each partition counts retention.bytes and a segment as large.
		p["config.retention.bytes"] = retention
		p["config.segment.bytes"] = retention
	}
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Parameters: p}}
}

// TestBudgetAtAdmission (#37): the webhook refuses a create or a growth
// past the namespace's budget on the backend, summed from its cache, with
// what the namespace uses, what it asks for and the budget; unbounded
// resources under a byte budget; and admits what does not grow.
func TestBudgetAtAdmission(t *testing.T) {
	orders := topicOf("team", "orders", "kafka", "4", "1048576")
	v := budgetValidators(t, orders,
		topicOf("other", "big", "kafka", "6", "1048576"), // another namespace
		topicOf("team", "elsewhere", "open", "50", ""))   // another backend without a budget
	bv := BucketyValidator{v}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		b    *v1.Buckety
		err  string
	}{
		{"fits", topicOf("team", "payments", "kafka", "2", "1048576"), ""},
		{"partitions over", topicOf("team", "payments", "kafka", "3", "1048576"),
			"spec.parameters[partitions]: Forbidden: namespace team has no room on backend kafka: it uses 4 and asks for 3 more, over its budget of 6 partitions (limits.partitions)"},
		{"disk over", topicOf("team", "payments", "kafka", "2", "2097152"),
			"spec.parameters[config.retention.bytes]: Forbidden: namespace team has no room on backend kafka: it uses 8Mi and asks for 8Mi more, over its budget of 12Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.diskBytes)"},
		{"unbounded retention", topicOf("team", "payments", "kafka", "1", ""),
			"spec.parameters[config.retention.bytes]: Required value: backend kafka gives each namespace a disk budget (limits.diskBytes: 12Mi"},
		{"compacted topics never shrink by size", func() *v1.Buckety {
			b := topicOf("team", "payments", "kafka", "1", "1024")
			b.Spec.Parameters["config.cleanup.policy"] = "compact"
			return b
		}(), "spec.parameters[config.retention.bytes]: Required value"},
		{"a bucket without quota under a quota budget", &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: "team"}, Spec: v1.BucketySpec{Backend: "s3"}},
			"spec.parameters[quota]: Required value: backend s3 gives each namespace a bucket quota budget (limits.quotaBytes: 2Gi"},
		{"no budget on the backend", topicOf("team", "more", "open", "500", ""), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := bv.ValidateCreate(ctx, c.b)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("want it admitted, got %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("want %q, got %v", c.err, err)
			}
		})
	}

	grow := orders.DeepCopy()
	grow.Spec.Parameters["partitions"] = "7"
	if _, err := bv.ValidateUpdate(ctx, orders, grow); err == nil || !strings.Contains(err.Error(), "it uses 4 and asks for 3 more, over its budget of 6 partitions") {
		t.Errorf("growth past the budget: want it refused with the numbers, got %v", err)
	}
	deeper := orders.DeepCopy()
	deeper.Spec.Parameters["config.retention.bytes"] = "4194304"
	if _, err := bv.ValidateUpdate(ctx, orders, deeper); err == nil || !strings.Contains(err.Error(), "spec.parameters[config.retention.bytes]: Forbidden") {
		t.Errorf("retention grown past the disk budget: want the refusal to name config.retention.bytes, got %v", err)
	}
	within := orders.DeepCopy()
	within.Spec.Parameters["partitions"] = "6"
	if _, err := bv.ValidateUpdate(ctx, orders, within); err != nil {
		t.Errorf("growth within the budget (its own 4 partitions count once): want it admitted, got %v", err)
	}
}

// TestBudgetLoweredBlocksOnlyGrowth: a namespace already over its budget
// (lowered by the maintainer) may change what does not grow and shrink,
// and may not grow.
func TestBudgetLoweredBlocksOnlyGrowth(t *testing.T) {
	a, b := topicOf("team", "a", "kafka", "5", "1048576"), topicOf("team", "b", "kafka", "5", "1048576")
	bv := BucketyValidator{budgetValidators(t, a, b)}
	ctx := context.Background()
	same := a.DeepCopy()
	same.Spec.Parameters["config.retention.ms"] = "3600000"
	if _, err := bv.ValidateUpdate(ctx, a, same); err != nil {
		t.Errorf("a change that does not grow, over budget: want it admitted, got %v", err)
	}
	shrink := a.DeepCopy()
	shrink.Spec.Parameters["config.retention.bytes"] = "1024"
	if _, err := bv.ValidateUpdate(ctx, a, shrink); err != nil {
		t.Errorf("shrinking, over budget: want it admitted, got %v", err)
	}
	grow := a.DeepCopy()
	grow.Spec.Parameters["config.retention.bytes"] = "2097152"
	if _, err := bv.ValidateUpdate(ctx, a, grow); err == nil || !strings.Contains(err.Error(), "limits.diskBytes") {
		t.Errorf("growing, over budget: want it refused, got %v", err)
	}
}

// TestBudgetGrandfathersUnbounded: a topic unbounded since before the disk
// budget keeps its other edits; making a bounded one unbounded is refused.
func TestBudgetGrandfathersUnbounded(t *testing.T) {
	old := topicOf("team", "legacy", "kafka", "1", "")
	bv := BucketyValidator{budgetValidators(t, old)}
	ctx := context.Background()
	edit := old.DeepCopy()
	edit.Spec.Parameters["config.retention.ms"] = "3600000"
	if _, err := bv.ValidateUpdate(ctx, old, edit); err != nil {
		t.Errorf("an edit of a topic unbounded since before the budget: want it admitted, got %v", err)
	}
	bounded := topicOf("team", "legacy", "kafka", "1", "1024")
	open := bounded.DeepCopy()
	delete(open.Spec.Parameters, "config.retention.bytes")
	if _, err := bv.ValidateUpdate(ctx, bounded, open); err == nil || !strings.Contains(err.Error(), "spec.parameters[config.retention.bytes]: Required value") {
		t.Errorf("removing retention.bytes under a disk budget: want it refused, got %v", err)
	}
}

// TestBudgetEscapesAtAdmission (issue 50): what a tenant who reads the
// code tries is refused at the webhook, by field.
func TestBudgetEscapesAtAdmission(t *testing.T) {
	ctx := context.Background()
	bucket := func(name, quota string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team"}, Spec: v1.BucketySpec{Backend: "s3", Parameters: map[string]string{"quota": quota}}}
	}
	// 1: a sum wrapped past the largest int64 fit every budget.
	bv := BucketyValidator{budgetValidators(t, bucket("small", "1"))}
	if _, err := bv.ValidateCreate(ctx, bucket("huge", "9223372036854775807")); err == nil || !strings.Contains(err.Error(), "over its budget of 2Gi of bucket quota (limits.quotaBytes)") {
		t.Errorf("a quota near the largest int64 after one of 1: want it refused, got %v", err)
	}
	if _, err := bv.ValidateCreate(ctx, bucket("alone", "3Gi")); err == nil || !strings.Contains(err.Error(), "limits.quotaBytes") {
		t.Errorf("a single quota above the budget: want it refused, got %v", err)
	}
	topic := topicOf("team", "orders", "kafka", "4", "1048576")
	tv := BucketyValidator{budgetValidators(t, topic)}
	// 2: removing partitions would count the broker's default.
	removed := topic.DeepCopy()
	delete(removed.Spec.Parameters, "partitions")
	if _, err := tv.ValidateUpdate(ctx, topic, removed); err == nil || !strings.Contains(err.Error(), "spec.parameters[partitions]: Forbidden: cannot be removed once set (was 4)") {
		t.Errorf("partitions removed: want it refused by field, got %v", err)
	}
	// 6: the broker's partition count, the broker's 1 GiB segments, and
	// configs that keep disk uncounted.
	for _, c := range []struct {
		name, drop, set, value, want string
	}{
		{name: "broker's partitions", drop: "partitions", want: "spec.parameters[partitions]: Required value: backend kafka gives each namespace a partition budget (limits.partitions: 6"},
		{name: "broker's segment size", drop: "config.segment.bytes", want: "spec.parameters[config.segment.bytes]: Required value"},
		{name: "deleted segments kept", set: "config.file.delete.delay.ms", value: "86400000", want: "spec.parameters[config.file.delete.delay.ms]: Forbidden: must be at most 60000"},
		{name: "index files grown", set: "config.segment.index.bytes", value: "1073741824", want: "spec.parameters[config.segment.index.bytes]: Forbidden: must be at most 10485760"},
	} {
		b := topicOf("team", "slack", "kafka", "1", "1024")
		delete(b.Spec.Parameters, c.drop)
		if c.set != "" {
			b.Spec.Parameters[c.set] = c.value
		}
		if _, err := tv.ValidateCreate(ctx, b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want %q, got %v", c.name, c.want, err)
		}
	}
}
