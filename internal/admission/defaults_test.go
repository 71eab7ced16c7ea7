package admission

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// platformConfig gives backend kafka a disk budget with defaults that
// bound every topic, floors, a deny list, and more room for namespace
// team-gold and for namespaces labelled tier=gold.
const platformConfig = `backends:
- name: kafka
  driver: kadm
  config: {seedBrokers: ['kafka:9092']}
  parameters:
    partitions: "2"
    config.retention.bytes: "1048576"
    config.segment.bytes: "1048576"
  limits:
    diskBytes: 8Mi
    parameterMin: {config.segment.ms: 60000}
    parameterMax: {partitions: 12}
    deniedParameters: ["config.flush.*"]
    namespaces:
    - names: [team-gold]
      diskBytes: 64Mi
    - selector: {matchLabels: {tier: gold}}
      diskBytes: 32Mi
`

func platformValidators(t *testing.T, nsLabels map[string]map[string]string, existing ...*v1.Buckety) BucketyValidator {
	t.Helper()
	v := validatorsCounting(t, platformConfig, existing...)
	v.WithNamespaceLabels(func(_ context.Context, ns string) (map[string]string, error) { return nsLabels[ns], nil })
	return BucketyValidator{v}
}

func topicWith(ns, name string, params map[string]string) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Parameters: params}}
}

// TestBackendDefaultsCountTowardBudgets (#52): a tenant who writes no
// retention.bytes under a disk budget is admitted with the backend's
// defaults, which count as if written: 2 partitions × 2 MiB = 4 MiB each,
// so two topics fill the 8 MiB budget and a third is refused with the
// numbers; a tenant's own key wins over the default.
func TestBackendDefaultsCountTowardBudgets(t *testing.T) {
	ctx := context.Background()
	a := topicWith("team", "a", nil)
	bv := platformValidators(t, nil)
	if _, err := bv.ValidateCreate(ctx, a); err != nil {
		t.Fatalf("a topic that sets nothing, under a disk budget the defaults bound: want it admitted, got %v", err)
	}
	bv = platformValidators(t, nil, a, topicWith("team", "b", nil))
	_, err := bv.ValidateCreate(ctx, topicWith("team", "c", nil))
	if err == nil || !strings.Contains(err.Error(), "it uses 8Mi and asks for 4Mi more, over its budget of 8Mi of disk") {
		t.Fatalf("a third defaulted topic: want the budget's numbers, got %v", err)
	}
	one := topicWith("team", "c", map[string]string{"partitions": "1", "config.retention.bytes": "1", "config.segment.bytes": "1048576"})
	if _, err := bv.ValidateCreate(ctx, one); err == nil || !strings.Contains(err.Error(), "asks for 1048577 more") {
		t.Fatalf("the tenant's own keys must replace the defaults in the count (1 partition × (1 B + 1 MiB)): got %v", err)
	}
}

// TestFloorsAndDeniedParameters (#52): parameterMin refuses a value below
// the floor with the key, the value, the floor and the config key;
// deniedParameters refuses the keys it matches, naming the pattern.
func TestFloorsAndDeniedParameters(t *testing.T) {
	ctx := context.Background()
	bv := platformValidators(t, nil)
	_, err := bv.ValidateCreate(ctx, topicWith("team", "fast", map[string]string{"config.segment.ms": "1"}))
	want := `spec.parameters[config.segment.ms]: Invalid value: "1": backend kafka allows at least 60000 (limits.parameterMin.config.segment.ms in buckety-controller.yaml)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("segment.ms 1: want %q, got %v", want, err)
	}
	if _, err := bv.ValidateCreate(ctx, topicWith("team", "ok", map[string]string{"config.segment.ms": "60000"})); err != nil {
		t.Errorf("segment.ms at the floor: want it admitted, got %v", err)
	}
	_, err = bv.ValidateCreate(ctx, topicWith("team", "flush", map[string]string{"config.flush.messages": "1"}))
	want = `spec.parameters[config.flush.messages]: Forbidden: backend kafka does not let tenants set it (limits.deniedParameters: "config.flush.*" in buckety-controller.yaml)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("flush.messages: want %q, got %v", want, err)
	}
	old := topicWith("team", "t", map[string]string{"config.segment.ms": "60000"})
	lower := old.DeepCopy()
	lower.Spec.Parameters["config.segment.ms"] = "100"
	if _, err := bv.ValidateUpdate(ctx, old, lower); err == nil || !strings.Contains(err.Error(), "allows at least 60000") {
		t.Errorf("an update below the floor: want it refused, got %v", err)
	}
}

// TestNamespaceBudgets (#52): limits.namespaces gives a namespace named
// in it, or labelled as its selector asks, its own budget, and the
// message names the entry.
func TestNamespaceBudgets(t *testing.T) {
	ctx := context.Background()
	big := map[string]string{"partitions": "4", "config.retention.bytes": "2097152", "config.segment.bytes": "2097152"} // 16 MiB
	labels := map[string]map[string]string{"labelled": {"tier": "gold"}}
	bv := platformValidators(t, labels)
	if _, err := bv.ValidateCreate(ctx, topicWith("team", "big", big)); err == nil || !strings.Contains(err.Error(), "over its budget of 8Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.diskBytes)") {
		t.Errorf("16 MiB in a namespace with the backend's 8 MiB: want it refused, got %v", err)
	}
	if _, err := bv.ValidateCreate(ctx, topicWith("team-gold", "big", big)); err != nil {
		t.Errorf("16 MiB in team-gold (64 MiB by name): want it admitted, got %v", err)
	}
	if _, err := bv.ValidateCreate(ctx, topicWith("labelled", "big", big)); err != nil {
		t.Errorf("16 MiB in a namespace labelled tier=gold (32 MiB): want it admitted, got %v", err)
	}
	huge := map[string]string{"partitions": "12", "config.retention.bytes": "2097152", "config.segment.bytes": "2097152"} // 48 MiB
	if _, err := bv.ValidateCreate(ctx, topicWith("labelled", "huge", huge)); err == nil || !strings.Contains(err.Error(), "over its budget of 32Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.namespaces[1].diskBytes)") {
		t.Errorf("48 MiB where the selector's entry gives 32 MiB: want it refused naming limits.namespaces[1].diskBytes, got %v", err)
	}
}

// TestDefaultConflictNamed: a tenant's value that conflicts with a
// backend default (a soft quota above the default hard quota) is refused
// with a message naming the default and where it is set; what the
// tenant's parameters break on their own is not blamed on the defaults.
func TestDefaultConflictNamed(t *testing.T) {
	cfg := webhookConfig(t, `backends:
- name: s3
  driver: s3
  config: {implementation: minio, endpoint: 'http://minio:9000', accessKeyID: '${AK}', secretAccessKey: '${SK}'}
  parameters: {quota: 1Gi}
`)
	v, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	bv := BucketyValidator{v}
	bucket := func(p map[string]string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "bucket", Namespace: "team"}, Spec: v1.BucketySpec{Backend: "s3", Parameters: p}}
	}
	if _, err := bv.ValidateCreate(context.Background(), bucket(map[string]string{"softQuota": "512Mi"})); err != nil {
		t.Errorf("a soft quota under the default quota: want admitted, got %v", err)
	}
	_, err = bv.ValidateCreate(context.Background(), bucket(map[string]string{"softQuota": "2Gi"}))
	if err == nil || !strings.Contains(err.Error(), `(checked with backend s3's defaults merged in: quota="1Gi", from parameters in buckety-controller.yaml)`) {
		t.Errorf("want the conflicting default named, got %v", err)
	}
	_, err = bv.ValidateCreate(context.Background(), bucket(map[string]string{"nosuch": "x"}))
	if err == nil || strings.Contains(err.Error(), "defaults merged in") {
		t.Errorf("an unknown key is the tenant's own error: want it refused without the defaults, got %v", err)
	}
}
