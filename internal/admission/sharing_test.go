package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// sharingConfig has a backend that shares between any namespaces, one
// that forbids sharing, and one that shares only between labelled ones.
const sharingConfig = `backends:
- name: kafka
  driver: kadm
  config: {seedBrokers: ['kafka:9092']}
- name: closed
  driver: kadm
  service: kafka
  config: {seedBrokers: ['kafka:9092']}
  sharing: {allow: false}
- name: labelled
  driver: kadm
  service: kafka
  config: {seedBrokers: ['kafka:9092']}
  sharing: {namespaceSelector: {matchLabels: {sharing: "on"}}}
- name: users
  driver: kadm
  service: kafka
  config: {seedBrokers: ['kafka:9092'], sasl: {mechanism: SCRAM-SHA-512, username: buckety, password: secret}}
`

// sharingValidators knows Buckety payments/orders on each backend
// (orders, closed-orders, labelled-orders), each sharing ReadOnly with
// namespace analytics, and teams by label; namespaces payments and
// analytics are labelled sharing=on, namespace other is not.
func sharingValidators(t *testing.T) *Validators {
	t.Helper()
	rule := []v1.SharingRule{
		{Namespace: "analytics", Roles: []v1.Role{v1.RoleReadOnly}},
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}, Roles: []v1.Role{v1.RoleReadWrite}},
	}
	known := map[string]*v1.Buckety{}
	for name, backend := range map[string]string{"orders": "kafka", "closed-orders": "closed", "labelled-orders": "labelled", "private": "kafka"} {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: name}, Spec: v1.BucketySpec{Backend: backend}}
		if name != "private" {
			b.Spec.Sharing = rule
		}
		known["payments/"+name] = b
	}
	v, err := New(webhookConfig(t, sharingConfig), func(_ context.Context, ns, name string) (*v1.Buckety, bool) {
		b, ok := known[ns+"/"+name]
		return b, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]string{
		"payments": {"sharing": "on"}, "analytics": {"sharing": "on"}, "lab": {"sharing": "on", "team": "data"}, "other": {"team": "data"},
	}
	return v.WithNamespaceLabels(func(_ context.Context, ns string) (map[string]string, error) { return labels[ns], nil })
}

func foreignAccess(ns, buckety string, role v1.Role) *v1.BucketyAccess {
	return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "payments", Name: buckety}, CredentialsSecretName: "reader", Role: role}}
}

// TestSharedAccessAdmission: an access to another namespace's Buckety is
// admitted only where the owner's spec.sharing allows its namespace and
// role, and the backend's sharing configuration both namespaces; the
// refusal names the Buckety, the namespace and the role, and what the
// owner would add.
func TestSharedAccessAdmission(t *testing.T) {
	v := AccessValidator{sharingValidators(t)}
	for _, c := range []struct {
		name string
		a    *v1.BucketyAccess
		want string // "" admitted
	}{
		{"the named namespace, the shared role", foreignAccess("analytics", "orders", v1.RoleReadOnly), ""},
		{"the named namespace, another role", foreignAccess("analytics", "orders", v1.RoleReadWrite),
			`spec.bucketyRef: Forbidden: Buckety payments/orders does not exist or does not share role ReadWrite with namespace analytics: its owner adds {namespace: analytics, roles: [ReadWrite]} to the Buckety's spec.sharing`},
		{"the default role is ReadWrite", foreignAccess("analytics", "orders", ""), "does not exist or does not share role ReadWrite with namespace analytics"},
		{"a namespace no rule names", foreignAccess("ops", "orders", v1.RoleReadOnly), "does not share role ReadOnly with namespace ops"},
		{"a namespace a selector names", foreignAccess("other", "orders", v1.RoleReadWrite), ""},
		{"a Buckety that shares nothing", foreignAccess("analytics", "private", v1.RoleReadOnly), "Buckety payments/private does not exist or does not share role ReadOnly with namespace analytics"},
		{"a Buckety that does not exist", foreignAccess("analytics", "ghost", v1.RoleReadOnly),
			// The same words as for a Buckety that does not share: no
			// tenant learns which Bucketies another namespace holds.
			"spec.bucketyRef: Forbidden: Buckety payments/ghost does not exist or does not share role ReadOnly with namespace analytics: its owner adds {namespace: analytics, roles: [ReadOnly]} to the Buckety's spec.sharing"},
		{"a backend that forbids sharing, where the owner consents", foreignAccess("analytics", "closed-orders", v1.RoleReadOnly),
			`backend "closed" does not allow sharing between namespaces: its configuration in buckety-controller.yaml sets sharing.allow: false`},
		{"a backend that forbids sharing, where the owner does not consent", foreignAccess("ops", "closed-orders", v1.RoleReadOnly),
			"Buckety payments/closed-orders does not exist or does not share role ReadOnly with namespace ops"},
		{"a backend's selector, both namespaces labelled", foreignAccess("analytics", "labelled-orders", v1.RoleReadOnly), ""},
		{"a backend's selector, the consumer not labelled", foreignAccess("other", "labelled-orders", v1.RoleReadWrite),
			`backend "labelled" shares only between namespaces its sharing.namespaceSelector (sharing=on) selects in buckety-controller.yaml, and namespace other is not one`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.ValidateCreate(context.Background(), c.a)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want admitted, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("want refused with %q, got %v", c.want, err)
			}
		})
	}
}

// TestSharedAccessRoleChange: a role change on an access to another
// namespace's Buckety is checked against the owner's consent again.
func TestSharedAccessRoleChange(t *testing.T) {
	v := AccessValidator{sharingValidators(t)}
	old := foreignAccess("analytics", "orders", v1.RoleReadOnly)
	a := old.DeepCopy()
	a.Spec.Role = v1.RoleReadWrite
	if _, err := v.ValidateUpdate(context.Background(), old, a); err == nil || !strings.Contains(err.Error(), "does not share role ReadWrite") {
		t.Fatalf("want the role change refused, got %v", err)
	}
}

// TestSharingRules: spec.sharing is refused where the backend forbids
// sharing, naming its own namespace, or with a selector that does not
// parse; narrowing it is admitted.
func TestSharingRules(t *testing.T) {
	v := BucketyValidator{sharingValidators(t)}
	mk := func(backend string, rules ...v1.SharingRule) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders"}, Spec: v1.BucketySpec{Backend: backend, Sharing: rules}}
	}
	ro := []v1.Role{v1.RoleReadOnly}
	for _, c := range []struct {
		name string
		b    *v1.Buckety
		want string
	}{
		{"a namespace", mk("kafka", v1.SharingRule{Namespace: "analytics", Roles: ro}), ""},
		{"forbidden by the backend", mk("closed", v1.SharingRule{Namespace: "analytics", Roles: ro}),
			`spec.sharing: Forbidden: backend "closed" does not allow sharing between namespaces`},
		{"its own namespace", mk("kafka", v1.SharingRule{Namespace: "payments", Roles: ro}),
			`spec.sharing[0].namespace: Invalid value: "payments": is the Buckety's own namespace`},
		{"a bad selector", mk("kafka", v1.SharingRule{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}, Roles: ro}),
			`spec.sharing[0].namespaceSelector: Invalid value`},
		{"a selector of 64 values", mk("kafka", v1.SharingRule{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: values(64)}}}, Roles: ro}), ""},
		// A selector of a million values cost several MiB in every
		// replica's and webhook's cache.
		{"a selector of 65 values", mk("kafka", v1.SharingRule{Namespace: "analytics", Roles: ro}, v1.SharingRule{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: values(65)}}}, Roles: ro}),
			`spec.sharing[1].namespaceSelector.matchExpressions[0].values: Too many: 65: must have at most 64 items`},
		{"17 expressions", mk("kafka", v1.SharingRule{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: expressions(17)}, Roles: ro}),
			`spec.sharing[0].namespaceSelector.matchExpressions: Too many: 17: must have at most 16 items`},
		{"33 labels", mk("kafka", v1.SharingRule{NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels(33)}, Roles: ro}),
			`spec.sharing[0].namespaceSelector.matchLabels: Too many: 33: must have at most 32 items`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.ValidateCreate(context.Background(), c.b)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want admitted, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("want refused with %q, got %v", c.want, err)
			}
		})
	}
	old := mk("closed")
	narrowed := mk("closed")
	if _, err := v.ValidateUpdate(context.Background(), old, narrowed); err != nil {
		t.Errorf("want a Buckety without sharing admitted on a closed backend, got %v", err)
	}
	// A backend that left the config leaves sharing unjudged but for its
	// shape: the Buckety is still in every replica's and webhook's cache.
	gone := mk("retired")
	gone.Status.Backend = "retired"
	huge := gone.DeepCopy()
	huge.Spec.Sharing = []v1.SharingRule{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: values(65)}}}, Roles: ro}}
	const want = `spec.sharing[0].namespaceSelector.matchExpressions[0].values: Too many: 65: must have at most 64 items`
	if _, err := v.ValidateUpdate(context.Background(), gone, huge); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("backend gone: want %q, got %v", want, err)
	}
	small := gone.DeepCopy()
	small.Spec.Sharing = []v1.SharingRule{{Namespace: "analytics", Roles: ro}}
	if _, err := v.ValidateUpdate(context.Background(), huge, small); err != nil {
		t.Errorf("backend gone: want a narrowed selector admitted, got %v", err)
	}
}

// values is n distinct label values.
func values(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("team-%d", i)
	}
	return out
}

// expressions is n selector requirements on distinct keys.
func expressions(n int) []metav1.LabelSelectorRequirement {
	out := make([]metav1.LabelSelectorRequirement, n)
	for i := range out {
		out[i] = metav1.LabelSelectorRequirement{Key: fmt.Sprintf("k%d", i), Operator: metav1.LabelSelectorOpExists}
	}
	return out
}

// labels is n distinct matchLabels.
func labels(n int) map[string]string {
	out := map[string]string{}
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("k%d", i)] = "v"
	}
	return out
}

// TestSharingSharedKeysWarns: the owner of a Buckety shared on a backend
// that issues no credential per access is told that other namespaces get
// the backend's own credentials, which removing the rule cannot revoke;
// on a backend that issues a user per access, nothing is said.
func TestSharingSharedKeysWarns(t *testing.T) {
	v := BucketyValidator{sharingValidators(t)}
	mk := func(backend string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "payments", Name: "orders"},
			Spec: v1.BucketySpec{Backend: backend, Sharing: []v1.SharingRule{{Namespace: "analytics", Roles: []v1.Role{v1.RoleReadOnly}}}}}
	}
	w, err := v.ValidateCreate(context.Background(), mk("kafka"))
	if err != nil || !strings.Contains(strings.Join(w, "|"), `backend "kafka" issues no credential per access`) {
		t.Errorf("no sasl: want admitted with the warning, got %v %q", err, w)
	}
	old := mk("kafka")
	old.Spec.Sharing = nil
	if w, err := v.ValidateUpdate(context.Background(), old, mk("kafka")); err != nil || !strings.Contains(strings.Join(w, "|"), "cannot revoke what was read from it") {
		t.Errorf("sharing added: want admitted with the warning, got %v %q", err, w)
	}
	if w, err := v.ValidateCreate(context.Background(), mk("users")); err != nil || strings.Contains(strings.Join(w, "|"), "issues no credential per access") {
		t.Errorf("a user per access: want admitted without the warning, got %v %q", err, w)
	}
}
