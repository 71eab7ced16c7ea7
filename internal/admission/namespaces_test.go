package admission

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// countLimitsConfig gives backend tenants count limits, more for namespace
// big-team (by name) and a stricter one per Buckety for namespaces
// labelled tier=small.
const countLimitsConfig = `backends:
- name: tenants
  driver: kadm
  config: {seedBrokers: ['kafka:9092']}
  limits:
    perNamespace: 2
    accessesPerNamespace: 5
    accessesPerBuckety: 3
    namespaces:
    - names: [big-team]
      perNamespace: 4
      accessesPerNamespace: 10
    - selector: {matchLabels: {tier: small}}
      accessesPerBuckety: 1
`

// TestNamespaceBudgetByName (#52): an entry of limits.namespaces that
// names a namespace gives it its budget, and a topic over it is refused
// with what it asks for, the budget and the entry.
func TestNamespaceBudgetByName(t *testing.T) {
	ctx := context.Background()
	// 12 partitions × (4 MiB + 4 MiB): 96 MiB.
	huge := map[string]string{"partitions": "12", "config.retention.bytes": "4194304", "config.segment.bytes": "4194304"}
	used := topicWith("team-gold", "used", map[string]string{"partitions": "4", "config.retention.bytes": "2097152", "config.segment.bytes": "2097152"}) // 16 MiB
	bv := platformValidators(t, nil, used)
	_, err := bv.ValidateCreate(ctx, topicWith("team-gold", "huge", huge))
	want := "namespace team-gold has no room on backend kafka: it uses 16Mi and asks for 96Mi more, over its budget of 64Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.namespaces[0].diskBytes) in buckety-controller.yaml"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("96 MiB in team-gold (64 MiB by name, 16 MiB used): want %q, got %v", want, err)
	}
	_, err = bv.ValidateCreate(ctx, topicWith("team", "huge", huge))
	if err == nil || !strings.Contains(err.Error(), "over its budget of 8Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.diskBytes)") {
		t.Errorf("96 MiB in a namespace no entry matches: want the backend's budget named, got %v", err)
	}
}

// TestNamespaceCountLimits (#52): limits.namespaces overrides the count
// limits (perNamespace, accessesPerNamespace, accessesPerBuckety) by
// name and by label; a refusal names the entry and the figure, and a
// figure the entry leaves out stays the backend's, named as such.
func TestNamespaceCountLimits(t *testing.T) {
	ctx := context.Background()
	v := validatorsOn(t, countLimitsConfig)
	v.WithNamespaceLabels(func(_ context.Context, ns string) (map[string]string, error) {
		return map[string]map[string]string{"small-team": {"tier": "small"}}[ns], nil
	})
	var bucketies, perBuckety, onBackend int
	v.WithCounter(func(context.Context, string, string) (int, error) { return bucketies, nil })
	v.WithAccessCounter(func(context.Context, string, string, string) (int, int, error) { return perBuckety, onBackend, nil })
	bv, av := BucketyValidator{v}, AccessValidator{v}
	for _, c := range []struct {
		name, ns                         string
		bucketies, perBuckety, onBackend int
		err                              string
	}{
		{"no entry: the backend's accesses per namespace", "team", 0, 1, 5, "namespace team already has 5 BucketyAccesses on backend tenants, the most its limits allow (limits.accessesPerNamespace: 5 in buckety-controller.yaml)"},
		{"by name: more accesses", "big-team", 0, 1, 5, ""},
		{"by name: at its accesses per namespace", "big-team", 0, 1, 10, "namespace big-team already has 10 BucketyAccesses on backend tenants, the most its limits allow (limits.namespaces[0].accessesPerNamespace: 10 in buckety-controller.yaml)"},
		{"by name: per Buckety left to the backend", "big-team", 0, 3, 4, "Buckety orders already has 3 BucketyAccesses, the most backend tenants allows per Buckety (limits.accessesPerBuckety: 3 in buckety-controller.yaml)"},
		{"by label: fewer per Buckety", "small-team", 0, 1, 1, "Buckety orders already has 1 BucketyAccesses, the most backend tenants allows per Buckety (limits.namespaces[1].accessesPerBuckety: 1 in buckety-controller.yaml)"},
		{"by label: under it", "small-team", 0, 0, 4, ""},
		{"by name: more Bucketies", "big-team", 3, 0, 0, ""},
		{"by name: at its Bucketies per namespace", "big-team", 4, 0, 0, "namespace big-team already has 4 Bucketies on backend tenants, the most its limits allow (limits.namespaces[0].perNamespace: 4 in buckety-controller.yaml)"},
		{"by label: the backend's Bucketies per namespace", "small-team", 2, 0, 0, "namespace small-team already has 2 Bucketies on backend tenants, the most its limits allow (limits.perNamespace: 2 in buckety-controller.yaml)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bucketies, perBuckety, onBackend = c.bucketies, c.perBuckety, c.onBackend
			var err error
			if c.bucketies > 0 {
				_, err = bv.ValidateCreate(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: c.ns}, Spec: v1.BucketySpec{Backend: "tenants"}})
			} else {
				_, err = av.ValidateCreate(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: c.ns},
					Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "a"}})
			}
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("want it admitted, got %v", err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("want %q, got %v", c.err, err)
			}
		})
	}
}

// validatorsOn are validators on the config text whose Buckety lookup
// finds a Buckety orders on backend tenants in every namespace.
func validatorsOn(t *testing.T, text string) *Validators {
	t.Helper()
	v, err := New(webhookConfig(t, text), func(_ context.Context, ns, name string) (*v1.Buckety, bool) {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "tenants"}}, name == "orders"
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSharedBucketyCountsItsOwnersLimit: an access of namespace big-team
// naming Buckety small-team/orders, shared with it, is refused at
// small-team's accessesPerBuckety (1, by label), not admitted under
// big-team's (the backend's 3): a Buckety's limit is its owner's.
func TestSharedBucketyCountsItsOwnersLimit(t *testing.T) {
	ctx := context.Background()
	v, err := New(webhookConfig(t, countLimitsConfig), func(_ context.Context, ns, name string) (*v1.Buckety, bool) {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "tenants",
			Sharing: []v1.SharingRule{{Namespace: "big-team", Roles: []v1.Role{v1.RoleReadOnly}}}}}, name == "orders"
	})
	if err != nil {
		t.Fatal(err)
	}
	v.WithNamespaceLabels(func(_ context.Context, ns string) (map[string]string, error) {
		return map[string]map[string]string{"small-team": {"tier": "small"}}[ns], nil
	})
	v.WithAccessCounter(func(context.Context, string, string, string) (int, int, error) { return 1, 1, nil })
	_, err = AccessValidator{v}.ValidateCreate(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "big-team"},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "small-team", Name: "orders"}, CredentialsSecretName: "a", Role: v1.RoleReadOnly}})
	want := "Buckety small-team/orders already has 1 BucketyAccesses, the most backend tenants allows per Buckety (limits.namespaces[1].accessesPerBuckety: 1 in buckety-controller.yaml)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("big-team's access to small-team/orders: want %q, got %v", want, err)
	}
}
