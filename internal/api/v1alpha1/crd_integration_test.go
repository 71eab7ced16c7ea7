package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TestCRDsOnRealAPIServer installs the generated CRDs on a real
// kube-apiserver and checks what the CRDs promise: defaults, enums, the CEL
// immutability rules, the status subresource and the printer columns.
func TestCRDsOnRealAPIServer(t *testing.T) {
	cp, c := startWithCRDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant1"}}); err != nil {
		t.Fatal(err)
	}

	b := &v1.Buckety{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "tenant1", Labels: map[string]string{"yolean.se/generation": "003"}},
		Spec: v1.BucketySpec{
			Backend:       "cluster-kafka",
			Name:          "${namespace}.${name}.v${label['yolean.se/generation']}",
			Parameters:    map[string]string{"partitions": "12", "config.retention.ms": "604800000"},
			DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "orders-topic"},
		},
	}
	if err := c.Create(ctx, b); err != nil {
		t.Fatalf("create Buckety: %v", err)
	}
	if b.Spec.RetentionPolicy != v1.RetentionRetain {
		t.Errorf("retentionPolicy: want default Retain, got %q", b.Spec.RetentionPolicy)
	}
	if b.Spec.DefaultAccess.Role != v1.RoleReadWrite {
		t.Errorf("defaultAccess.role: want default ReadWrite, got %q", b.Spec.DefaultAccess.Role)
	}

	rejected := func(what string, obj client.Object, mutate func(), want string) {
		t.Helper()
		mutate()
		err := c.Update(ctx, obj)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want rejection containing %q, got %v", what, want, err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}
	rejected("change spec.backend", b, func() { b.Spec.Backend = "other" }, "spec.backend is immutable")
	rejected("change spec.name", b, func() { b.Spec.Name = "${name}" }, "spec.name is immutable")
	rejected("remove spec.name", b, func() { b.Spec.Name = "" }, "spec.name is immutable")
	rejected("invalid retentionPolicy", b, func() { b.Spec.RetentionPolicy = "Keep" }, `spec.retentionPolicy: Unsupported value: "Keep": supported values: "Retain", "Delete"`)

	// Mutable fields stay mutable.
	b.Spec.Parameters["partitions"] = "24"
	b.Spec.RetentionPolicy = v1.RetentionDelete
	b.Spec.DefaultAccess = nil
	if err := c.Update(ctx, b); err != nil {
		t.Fatalf("update mutable fields: want success, got %v", err)
	}

	// Adding a name where there was none is a change too.
	plain := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "cluster-kafka"}}
	if err := c.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	rejected("add spec.name", plain, func() { plain.Spec.Name = "x" }, "spec.name is immutable")

	bad := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "cluster-kafka", RetentionPolicy: "Forever"}}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), `Unsupported value: "Forever"`) {
		t.Errorf("create with retentionPolicy Forever: want enum rejection, got %v", err)
	}

	// The status subresource: status is written separately and shows in
	// the printer columns.
	b.Status.BackendResourceName = "tenant1.orders.v003"
	b.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled, Message: "ok", LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatalf("status update: %v", err)
	}
	// Conditions are one atomic list: a status write with every declared
	// condition records one field for them in managedFields, not six per
	// condition (docs/performance.md, "Conditions as one atomic list").
	all := make([]metav1.Condition, 0, len(v1.BucketyConditions))
	for _, d := range v1.BucketyConditions {
		c := metav1.Condition{Type: d.Type, Status: metav1.ConditionFalse, Reason: v1.ReasonAsExpected, Message: "ok", LastTransitionTime: metav1.Now()}
		if d.Type == v1.ConditionReady { // for the printer columns below
			c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonReconciled
		}
		all = append(all, c)
	}
	b.Status.Conditions = all
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatalf("status update with every condition: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	if len(b.Status.Conditions) != len(v1.BucketyConditions) {
		t.Errorf("status conditions: want %d, got %d", len(v1.BucketyConditions), len(b.Status.Conditions))
	}
	for _, m := range b.ManagedFields {
		if m.Subresource != "status" || m.FieldsV1 == nil {
			continue
		}
		if f := m.FieldsV1.GetRawString(); !strings.Contains(f, `"f:conditions":{}`) || strings.Contains(f, `k:{`) {
			t.Errorf("managedFields of the status write: want conditions as one atomic field, got %s", f)
		}
	}

	a := &v1.BucketyAccess{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-reader", Namespace: "tenant1"},
		Spec:       v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "orders-reader", Role: v1.RoleReadOnly},
	}
	if err := c.Create(ctx, a); err != nil {
		t.Fatalf("create BucketyAccess: %v", err)
	}
	rejected("change bucketyRef", a, func() { a.Spec.BucketyRef.Name = "other" }, "spec.bucketyRef is immutable")
	rejected("bucketyRef changed to bucketyRefs", a, func() {
		a.Spec.BucketyRef, a.Spec.BucketyRefs = v1.BucketyReference{}, []v1.BucketyReference{{Name: "orders"}}
	}, "spec.bucketyRef and spec.bucketyRefs are immutable")
	rejected("bucketyRefs beside bucketyRef", a, func() { a.Spec.BucketyRefs = []v1.BucketyReference{{Name: "orders"}} }, "set exactly one of bucketyRef (one Buckety) and bucketyRefs (several)")
	rejected("change credentialsSecretName", a, func() { a.Spec.CredentialsSecretName = "other" }, "spec.credentialsSecretName is immutable")
	rejected("invalid role", a, func() { a.Spec.Role = "Admin" }, `spec.role: Unsupported value: "Admin"`)
	rejected("invalid secret name", a, func() { a.Spec.CredentialsSecretName = "Not_A_Name" }, "spec.credentialsSecretName")

	// An access naming several Bucketies: 1 to 128, the list immutable.
	refs := func(n int) []v1.BucketyReference {
		out := make([]v1.BucketyReference, n)
		for i := range out {
			out[i] = v1.BucketyReference{Name: fmt.Sprintf("t%d", i)}
		}
		return out
	}
	createRejected := func(what string, a *v1.BucketyAccess, want string) {
		t.Helper()
		if err := c.Create(ctx, a); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want rejection containing %q, got %v", what, want, err)
		}
	}
	multi := func(name string, r []v1.BucketyReference) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant1"}, Spec: v1.BucketyAccessSpec{BucketyRefs: r, CredentialsSecretName: name}}
	}
	createRejected("neither bucketyRef nor bucketyRefs", multi("none", nil), "set exactly one of bucketyRef (one Buckety) and bucketyRefs (several)")
	createRejected("129 Bucketies", multi("many", refs(129)), "spec.bucketyRefs: Too many: 129: must have at most 128 items")
	createRejected("an empty name among them", multi("empty", []v1.BucketyReference{{Name: "a"}, {}}), "spec.bucketyRefs[1].name")
	m := multi("multi", refs(128))
	if err := c.Create(ctx, m); err != nil {
		t.Fatalf("create a BucketyAccess naming 128 Bucketies: %v", err)
	}
	rejected("change bucketyRefs", m, func() { m.Spec.BucketyRefs = refs(2) }, "spec.bucketyRefs is immutable")
	rejected("bucketyRefs changed to bucketyRef", m, func() {
		m.Spec.BucketyRefs, m.Spec.BucketyRef = nil, v1.BucketyReference{Name: "t0"}
	}, "spec.bucketyRef and spec.bucketyRefs are immutable")
	// An access's parameters are bounded as a Buckety's are, by the API
	// server itself: what a tenant can make the controller cache is
	// bounded per object even where no webhook runs.
	rejected("an access parameter value over the bound", a, func() {
		a.Spec.Parameters = map[string]string{"consumerGroupPrefix": strings.Repeat("x", v1.MaxParameterValueLength+1)}
	}, "spec.parameters: keys are at most 253 characters and values at most 4096")
	rejected("a Buckety parameter value over the bound", b, func() {
		b.Spec.Parameters = map[string]string{"partitions": strings.Repeat("1", v1.MaxParameterValueLength+1)}
	}, "spec.parameters: keys are at most 253 characters and values at most 4096")
	a.Spec.Role = v1.RoleReadWrite
	if err := c.Update(ctx, a); err != nil {
		t.Fatalf("change role: want success, got %v", err)
	}

	kubectl := func(args ...string) string {
		t.Helper()
		out, err := cp.Kubectl(ctx, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := kubectl("get", "bucketies", "-n", "tenant1")
	for _, want := range []string{"NAME", "BACKEND", "RESOURCE", "READY", "AGE", "orders", "cluster-kafka", "tenant1.orders.v003", "True"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get bucketies: want %q in\n%s", want, out)
		}
	}
	if out := kubectl("get", "bky", "-n", "tenant1", "-o", "wide"); !strings.Contains(out, "REASON") || !strings.Contains(out, v1.ReasonReconciled) {
		t.Errorf("kubectl get bky -o wide: want the REASON column with %s, got\n%s", v1.ReasonReconciled, out)
	}
	out = kubectl("get", "bkya", "-n", "tenant1")
	for _, want := range []string{"BUCKETY", "SECRET", "ROLE", "READY", "orders-reader", "orders", "ReadWrite"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get bkya: want %q in\n%s", want, out)
		}
	}
	for _, list := range [][]string{{"buckety-all"}, {"bky,bkya"}} {
		out = kubectl(append([]string{"get", "-n", "tenant1", "-o", "name"}, list...)...)
		for _, want := range []string{"buckety.buckety.yolean.se/orders", "bucketyaccess.buckety.yolean.se/orders-reader"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get %s (both kinds): want %q in\n%s", list[0], want, out)
			}
		}
	}
	// The commands people type first: the singular with a name. They fail
	// with "you must specify only one resource" when a category is spelled
	// like the singular.
	if out := kubectl("get", "buckety", "orders", "-n", "tenant1"); !strings.Contains(out, "tenant1.orders.v003") {
		t.Errorf("kubectl get buckety orders: want the row of orders, got\n%s", out)
	}
	if out := kubectl("get", "bucketyaccess", "orders-reader", "-n", "tenant1", "-o", "name"); strings.TrimSpace(out) != "bucketyaccess.buckety.yolean.se/orders-reader" {
		t.Errorf("kubectl get bucketyaccess orders-reader: want its name, got\n%s", out)
	}
	if out := kubectl("describe", "buckety", "orders", "-n", "tenant1"); !strings.Contains(out, "Name:         orders") || !strings.Contains(out, "cluster-kafka") {
		t.Errorf("kubectl describe buckety orders: want the object, got\n%s", out)
	}
	effectiveColumns(ctx, t, c, kubectl)
	if out := kubectl("wait", "--for=condition=Ready", "buckety/orders", "-n", "tenant1", "--timeout=10s"); !strings.Contains(out, "condition met") {
		t.Errorf("kubectl wait --for=condition=Ready buckety/orders: want condition met, got\n%s", out)
	}
	if out := kubectl("delete", "buckety", "orders", "-n", "tenant1"); !strings.Contains(out, `buckety.buckety.yolean.se "orders" deleted`) {
		t.Errorf("kubectl delete buckety orders: want it deleted, got\n%s", out)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), &v1.Buckety{}); err == nil {
		t.Errorf("after kubectl delete buckety orders: want it gone, still there")
	}
	if out := kubectl("explain", "buckety.spec.retentionPolicy"); !strings.Contains(out, "Retain (default) keeps it") {
		t.Errorf("kubectl explain: want the field description, got\n%s", out)
	}
}

// effectiveColumns: a bucket whose quota and anonymous read come from
// the backend's defaults (status.effectiveParameters, not spec.parameters)
// shows them in the QUOTA and PUBLIC columns, and kubectl describe shows
// its effective parameters beside the defaults.
func effectiveColumns(ctx context.Context, t *testing.T, c client.Client, kubectl func(...string) string) {
	t.Helper()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: "tenant1"},
		Spec: v1.BucketySpec{Backend: "cluster-s3", Parameters: map[string]string{"versioning": "true"}}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status.BackendResourceName = "tenant1-files"
	b.Status.ParameterDefaults = map[string]string{"quota": "7Mi", "anonymousRead": "true"}
	b.Status.EffectiveParameters = map[string]string{"quota": "7Mi", "anonymousRead": "true", "versioning": "true"}
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatalf("status update with effectiveParameters: %v", err)
	}
	out := kubectl("get", "bky", "files", "-n", "tenant1", "-o", "wide")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "QUOTA") || !strings.Contains(lines[0], "PUBLIC") ||
		!strings.Contains(lines[1], "7Mi") || !strings.Contains(lines[1], "true") {
		t.Errorf("kubectl get bky files -o wide: want QUOTA 7Mi and PUBLIC true from status.effectiveParameters, got\n%s", out)
	}
	out = kubectl("describe", "buckety", "files", "-n", "tenant1")
	for _, want := range []string{"Effective Parameters:", "Parameter Defaults:", "7Mi"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe buckety files: want %q in\n%s", want, out)
		}
	}
}

// TestConditionsAtomicAfterUpgrade is the upgrade from a release whose
// CRDs kept conditions as a map keyed by type: objects whose managedFields
// hold an entry per condition take status writes under the atomic list,
// which then records the conditions as one field.
func TestConditionsAtomicAfterUpgrade(t *testing.T) {
	_, c := startWithCRDs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "bucketies.buckety.yolean.se"}, crd); err != nil {
		t.Fatal(err)
	}
	setListType := func(listType string, keys []string) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			t.Fatal(err)
		}
		conds := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"]
		conds.XListType, conds.XListMapKeys = &listType, keys
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"] = conds
		if err := c.Update(ctx, crd); err != nil {
			t.Fatalf("CRD with conditions as %s: %v", listType, err)
		}
	}
	generated := *crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"].XListType
	if generated != "atomic" {
		t.Fatalf("generated CRD: want status.conditions atomic, got %q", generated)
	}
	setListType("map", []string{"type"})

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant1"}}); err != nil {
		t.Fatal(err)
	}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "tenant1"}, Spec: v1.BucketySpec{Backend: "cluster-kafka"}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	statusFields := func() string {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			t.Fatal(err)
		}
		for _, m := range b.ManagedFields {
			if m.Subresource == "status" && m.FieldsV1 != nil {
				return m.FieldsV1.GetRawString()
			}
		}
		return ""
	}
	write := func(status metav1.ConditionStatus) error {
		b.Status.Conditions = []metav1.Condition{
			{Type: v1.ConditionReady, Status: status, Reason: v1.ReasonReconciled, Message: "m", LastTransitionTime: metav1.Now()},
			{Type: v1.ConditionReconciling, Status: metav1.ConditionFalse, Reason: v1.ReasonAsExpected, Message: "m", LastTransitionTime: metav1.Now()},
		}
		return c.Status().Update(ctx, b)
	}
	// The API server takes a moment to serve the changed schema (on a
	// loaded machine, many: the deadline is a backstop, not a speed goal).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := write(metav1.ConditionFalse); err != nil {
			t.Fatalf("status write under the map list: %v", err)
		}
		if strings.Contains(statusFields(), `k:{\"type\":\"Ready\"}`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status managedFields under the map list: want an entry per condition, got %s", statusFields())
		}
		time.Sleep(200 * time.Millisecond)
	}

	setListType(generated, nil) // the upgrade
	deadline = time.Now().Add(2 * time.Minute)
	for {
		if err := write(metav1.ConditionTrue); err != nil {
			t.Fatalf("status write after the upgrade: %v", err)
		}
		if f := statusFields(); strings.Contains(f, `"f:conditions":{}`) && !strings.Contains(f, "k:{") {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("status managedFields after the upgrade: want conditions as one field, got %s", f)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(b.Status.Conditions) != 2 || b.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Errorf("conditions after the upgrade: want the written two with Ready True, got %+v", b.Status.Conditions)
	}
}

// startWithCRDs starts a control plane with the generated CRDs and returns
// an admin client that knows the built-in kinds, buckety's and the CRDs'.
func startWithCRDs(t *testing.T) (*controlplane.ControlPlane, client.Client) {
	t.Helper()
	cp := controlplane.StartT(t, controlplane.Options{CRDDirs: []string{controlplane.CRDDir()}})
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return cp, c
}
