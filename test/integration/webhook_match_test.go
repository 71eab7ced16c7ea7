package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appwebhook "github.com/Yolean/buckety-controller/internal/app/webhook"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestWebhookSkipsMetadataOnlyUpdates: with the deployed matchConditions
// (harness.Register registers the deploy YAML's webhooks), the real API
// server sends every CREATE and every UPDATE that changes spec to the
// webhook, and no metadata-only UPDATE (label, annotation, finalizer,
// ownerReference): the webhook's verdict depends only on spec, so those
// calls could only admit. Counted with the webhook's own
// buckety_admission_requests_total, so without the matchConditions the
// metadata-only step fails.
func TestWebhookSkipsMetadataOnlyUpdates(t *testing.T) {
	needInfra(t)
	w := startWebhook(t)
	ns := namespace(t)
	ctx := context.Background()
	c := newWarningClient(t)
	w.waitMetrics(t)
	calls := func(kind, op string) float64 { return w.admissions(t, kind, op) }
	result := func(kind, op, r string) float64 {
		t.Helper()
		v, ok := w.metric(t, fmt.Sprintf(`buckety_admission_requests_total{kind=%q,operation=%q,result=%q}`, kind, op, r))
		if !ok {
			t.Fatalf("want buckety_admission_requests_total for %s %s %s on the webhook's /metrics", kind, op, r)
		}
		return v
	}
	// moved checks that the webhook answered exactly want more requests of
	// kind, op and result r since before.
	moved := func(what, kind, op, r string, before, want float64) {
		t.Helper()
		if got := result(kind, op, r) - before; got != want {
			t.Errorf("%s: want %g more %s %s %s admission requests at the webhook, got %g more", what, want, kind, op, r, got)
		}
	}
	buckety := func(name, backend string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Parameters: map[string]string{"partitions": "3"}}}
	}
	wait.For(t, waitTimeout, "webhook in effect", func() (bool, string) {
		err := c.Create(ctx, buckety("probe", "nope"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no such backend"), fmt.Sprint(err)
	})

	// CREATE reaches the webhook: an invalid one is refused naming the
	// field, a valid one is admitted.
	const kb, ka = "Buckety", "BucketyAccess"
	denied, allowed := result(kb, "CREATE", appwebhook.ResultDenied), result(kb, "CREATE", appwebhook.ResultAllowed)
	if err := c.Create(ctx, buckety("orders", "kafak")); err == nil || !strings.Contains(err.Error(), `admission webhook "bucketies.buckety.yolean.se" denied the request`) || !strings.Contains(err.Error(), `spec.backend: Invalid value: "kafak"`) {
		t.Errorf("create with an unknown backend: want refused by the webhook naming spec.backend, got %v", err)
	}
	b := buckety("orders", "kafka")
	if err := c.Create(ctx, b); err != nil {
		t.Fatalf("want a valid Buckety admitted, got %v", err)
	}
	// The stamp (the MutatingWebhookConfiguration harness.Register
	// registers): the object the API server stored carries buckety's
	// finalizer and its slot label, with no controller running.
	stampedOK := func(o client.Object) {
		t.Helper()
		if !slices.Equal(o.GetFinalizers(), []string{v1.Finalizer}) || o.GetLabels()[shard.SlotLabel] != shard.SlotValue(ns) {
			t.Errorf("%s %s as created: want finalizer %s and label %s=%s, got %v %v", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(),
				v1.Finalizer, shard.SlotLabel, shard.SlotValue(ns), o.GetFinalizers(), o.GetLabels())
		}
	}
	stampedOK(b)
	moved("invalid Buckety create", kb, "CREATE", appwebhook.ResultDenied, denied, 1)
	moved("valid Buckety create", kb, "CREATE", appwebhook.ResultAllowed, allowed, 1)

	acc := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "reader"}}
	badAcc := func() *v1.BucketyAccess {
		a := acc.DeepCopy()
		a.Name, a.Spec.Parameters = "bad-reader", map[string]string{"group": "x"}
		return a
	}
	// The access parameters are judged against the Buckety's driver once
	// it is in the webhook's cache.
	wait.For(t, waitTimeout, "Buckety in the webhook's cache", func() (bool, string) {
		err := c.Create(ctx, badAcc(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "spec.parameters[group]"), fmt.Sprint(err)
	})
	denied, allowed = result(ka, "CREATE", appwebhook.ResultDenied), result(ka, "CREATE", appwebhook.ResultAllowed)
	if err := c.Create(ctx, badAcc()); err == nil || !strings.Contains(err.Error(), `admission webhook "bucketyaccesses.buckety.yolean.se" denied the request`) || !strings.Contains(err.Error(), "spec.parameters[group]") {
		t.Errorf("create access with an unknown parameter: want refused by the webhook naming spec.parameters[group], got %v", err)
	}
	if err := c.Create(ctx, acc); err != nil {
		t.Fatalf("want a valid BucketyAccess admitted, got %v", err)
	}
	stampedOK(acc)
	moved("invalid BucketyAccess create", ka, "CREATE", appwebhook.ResultDenied, denied, 1)
	moved("valid BucketyAccess create", ka, "CREATE", appwebhook.ResultAllowed, allowed, 1)

	// Metadata-only UPDATEs (an Update and merge patches, as kubectl label
	// and the controller's finalizer patch send them) succeed and never
	// reach the webhook, including removing the finalizer again.
	before := map[string]float64{kb: calls(kb, "UPDATE"), ka: calls(ka, "UPDATE")}
	label := func(o client.Object) string { return o.GetLabels()["team"] }
	finalizers := func(o client.Object) string { return strings.Join(o.GetFinalizers(), ",") }
	addFinalizer := func(o client.Object) error {
		return c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+v1.Finalizer+`"]}}`)))
	}
	metadataOnly := []struct {
		name string
		obj  client.Object
		edit func(client.Object) error
		read func(client.Object) string
		want string
	}{
		{"label by update", b, func(o client.Object) error {
			l := o.GetLabels()
			l["team"] = "a"
			o.SetLabels(l)
			return c.Update(ctx, o)
		}, label, "a"},
		{"label by merge patch", acc, func(o client.Object) error {
			return c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`)))
		}, label, "a"},
		{"add finalizer", b, addFinalizer, finalizers, v1.Finalizer},
		{"add finalizer", acc, addFinalizer, finalizers, v1.Finalizer},
		{"ownerReference", acc, func(o client.Object) error {
			o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "Buckety", Name: b.Name, UID: b.UID}})
			return c.Update(ctx, o)
		}, func(o client.Object) string {
			var names []string
			for _, r := range o.GetOwnerReferences() {
				names = append(names, r.Name)
			}
			return strings.Join(names, ",")
		}, "orders"},
	}
	for _, m := range metadataOnly {
		kind := kb
		if _, ok := m.obj.(*v1.BucketyAccess); ok {
			kind = ka
		}
		name := kind + " " + m.name
		if err := m.edit(m.obj); err != nil {
			t.Errorf("%s: want admitted, got %v", name, err)
			continue
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(m.obj), m.obj); err != nil {
			t.Fatal(err)
		}
		if got := m.read(m.obj); got != m.want {
			t.Errorf("%s: want %q stored, got %q", name, m.want, got)
		}
	}
	for _, o := range []client.Object{b, acc} {
		if err := c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
			t.Errorf("%s: remove finalizer: want admitted, got %v", o.GetName(), err)
		}
		if f := o.GetFinalizers(); len(f) != 0 {
			t.Errorf("%s: want no finalizers after removal, got %v", o.GetName(), f)
		}
	}
	for _, kind := range []string{kb, ka} {
		if got := calls(kind, "UPDATE"); got != before[kind] {
			t.Errorf("metadata-only updates of %s: want no admission request at the webhook, got %g (the matchConditions do not filter them)", kind, got-before[kind])
		}
	}
	// Except one that changes the slot label, as kubectl label --overwrite
	// does, or removes it: the label picks the shard whose cache holds the
	// object, so a tenant's edit would take it out of every shard (its
	// credentials never revoked, its limits never counted). Refused
	// naming the label.
	for _, o := range []client.Object{b, acc} {
		for _, edit := range []struct{ what, value, want string }{
			{"relabel " + shard.SlotLabel + "=none", `"none"`, "Invalid value"},
			{"remove label " + shard.SlotLabel, "null", "Required value"},
		} {
			err := c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+shard.SlotLabel+`":`+edit.value+`}}}`)))
			if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "metadata.labels["+shard.SlotLabel+"]: "+edit.want) {
				t.Errorf("%s: %s: want refused by the webhook naming metadata.labels[%s], got %v", o.GetName(), edit.what, shard.SlotLabel, err)
			}
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		if got := o.GetLabels()[shard.SlotLabel]; got != shard.SlotValue(ns) {
			t.Errorf("%s: want label %s=%s kept, got %q", o.GetName(), shard.SlotLabel, shard.SlotValue(ns), got)
		}
	}

	// A spec UPDATE still reaches the webhook: an invalid one is refused
	// naming the field, a valid one admitted.
	denied, allowed = result(kb, "UPDATE", appwebhook.ResultDenied), result(kb, "UPDATE", appwebhook.ResultAllowed)
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Parameters["partitions"] = "1"
	if err := c.Update(ctx, b); err == nil || !strings.Contains(err.Error(), `admission webhook "bucketies.buckety.yolean.se" denied the request`) || !strings.Contains(err.Error(), "spec.parameters[partitions]: Forbidden: can only grow (was 3, now 1)") {
		t.Errorf("lower partitions: want refused by the webhook naming spec.parameters[partitions], got %v", err)
	}
	b.Spec.Parameters["partitions"] = "4"
	if err := c.Update(ctx, b); err != nil {
		t.Errorf("grow partitions: want admitted, got %v", err)
	}
	moved("invalid Buckety spec update", kb, "UPDATE", appwebhook.ResultDenied, denied, 1)
	moved("valid Buckety spec update", kb, "UPDATE", appwebhook.ResultAllowed, allowed, 1)
	// spec.backend and spec.name are immutable by the CRD's CEL rules, which
	// the API server checks before calling webhooks; still refused naming
	// the field.
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Backend, b.Spec.Name = "s3", "other"
	if err := c.Update(ctx, b); err == nil || !strings.Contains(err.Error(), "spec.backend") || !strings.Contains(err.Error(), "spec.name") || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("change backend and name: want refused as immutable naming spec.backend and spec.name, got %v", err)
	}

	denied, allowed = result(ka, "UPDATE", appwebhook.ResultDenied), result(ka, "UPDATE", appwebhook.ResultAllowed)
	if err := c.Get(ctx, client.ObjectKeyFromObject(acc), acc); err != nil {
		t.Fatal(err)
	}
	acc.Spec.Parameters = map[string]string{"group": "x"}
	if err := c.Update(ctx, acc); err == nil || !strings.Contains(err.Error(), `admission webhook "bucketyaccesses.buckety.yolean.se" denied the request`) || !strings.Contains(err.Error(), "spec.parameters[group]") {
		t.Errorf("access with an unknown parameter: want refused by the webhook naming spec.parameters[group], got %v", err)
	}
	acc.Spec.Parameters = nil
	acc.Spec.Role = v1.RoleReadOnly
	c.take()
	if err := c.Update(ctx, acc); err != nil {
		t.Errorf("access role change: want admitted, got %v", err)
	}
	if got := c.take(); !strings.Contains(got, "role ReadOnly is not enforced") {
		t.Errorf("access role change: want the webhook's warning relayed, got %q", got)
	}
	moved("invalid BucketyAccess spec update", ka, "UPDATE", appwebhook.ResultDenied, denied, 1)
	moved("valid BucketyAccess spec update", ka, "UPDATE", appwebhook.ResultAllowed, allowed, 1)

	// GitOps: a Buckety created by server-side apply (as Flux and kubectl
	// apply --server-side create it) and applied again from the same
	// manifest, then from an edited one, keeps the stamp. The API server
	// computes the applier's managed fields before it calls the mutating
	// webhook, so the finalizer and slot label belong to no manager and a
	// later apply that leaves them out does not remove them.
	const gitops = "gitops-e2e"
	manifest := func(partitions string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1.GroupVersion.String(), "kind": "Buckety",
			"metadata": map[string]any{"name": "applied", "namespace": ns, "labels": map[string]any{"team": "a"}},
			"spec":     map[string]any{"backend": "kafka", "parameters": map[string]any{"partitions": partitions}},
		}}
		return u
	}
	applied := &v1.Buckety{}
	for i, step := range []struct{ what, partitions string }{{"create", "3"}, {"same manifest again", "3"}, {"edited manifest", "4"}} {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(manifest(step.partitions)), client.FieldOwner(gitops)); err != nil {
			t.Fatalf("server-side apply, %s: want admitted, got %v", step.what, err)
		}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "applied"}, applied); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			stampedOK(applied)
		}
		if !slices.Contains(applied.Finalizers, v1.Finalizer) || applied.Labels[shard.SlotLabel] != shard.SlotValue(ns) || applied.Labels["team"] != "a" {
			t.Errorf("server-side apply, %s: want the stamp kept beside the applied label (finalizer %s, %s=%s, team=a), got %v %v",
				step.what, v1.Finalizer, shard.SlotLabel, shard.SlotValue(ns), applied.Finalizers, applied.Labels)
		}
		if got := applied.Spec.Parameters["partitions"]; got != step.partitions {
			t.Errorf("server-side apply, %s: want partitions %s stored, got %q", step.what, step.partitions, got)
		}
	}
	for _, f := range applied.ManagedFields {
		if f.Manager != gitops || f.FieldsV1 == nil {
			continue
		}
		if owned := f.FieldsV1.GetRawString(); strings.Contains(owned, v1.Finalizer) || strings.Contains(owned, shard.SlotLabel) {
			t.Errorf("server-side apply: want the stamped fields owned by no applier, got %s owning %s", gitops, owned)
		}
	}
}

// TestEveryCreateIsJudgedOnce: on the real API server, with the deployed
// configurations, a create is judged in the mutating webhook's one call
// (the verdict and the stamp), and the validating webhook is called for a
// create only when the object reaches it without the stamp. So a manifest
// that carries buckety's finalizer and slot label (copied from `kubectl
// get -o yaml`) is judged all the same; one the typed kind cannot hold is
// refused by the schema naming the field, its written-in stamp taken off;
// and one with a list in spec longer than the mutating webhook judges,
// which the schema admits (a label selector's values), is judged by the
// validating webhook, the stamp written in taken off for it, as is a
// create by generateName (named only after the mutating webhooks). Counted
// with buckety_admission_requests_total.
func TestEveryCreateIsJudgedOnce(t *testing.T) {
	needInfra(t)
	w := startWebhook(t)
	ns := namespace(t)
	ctx := context.Background()
	c := newWarningClient(t)
	w.waitMetrics(t)
	calls := func() float64 { return w.admissions(t, "Buckety", "CREATE") }
	stamped := func(name, backend string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: []string{v1.Finalizer}, Labels: map[string]string{shard.SlotLabel: shard.SlotValue(ns)}},
			Spec: v1.BucketySpec{Backend: backend, Parameters: map[string]string{"partitions": "3"}}}
	}
	wait.For(t, waitTimeout, "webhook in effect", func() (bool, string) {
		err := c.Create(ctx, stamped("probe", "nope"), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no such backend"), fmt.Sprint(err)
	})

	before := calls()
	if err := c.Create(ctx, stamped("copied", "kafak")); err == nil || !strings.Contains(err.Error(), `admission webhook "bucketies.buckety.yolean.se" denied the request`) || !strings.Contains(err.Error(), `spec.backend: Invalid value: "kafak"`) {
		t.Errorf("a stamped manifest with an unknown backend: want refused naming spec.backend, got %v", err)
	}
	if got := calls() - before; got != 1 {
		t.Errorf("a stamped manifest refused: want 1 call, got %g", got)
	}

	// The typed kind cannot hold a drain interval that does not parse.
	before = calls()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "Buckety",
		"metadata": map[string]any{"name": "soon", "namespace": ns, "finalizers": []any{v1.Finalizer}, "labels": map[string]any{shard.SlotLabel: shard.SlotValue(ns)}},
		"spec":     map[string]any{"backend": "kafka", "drain": map[string]any{"request": "r1", "interval": "soon"}},
	}}
	if err := c.Create(ctx, u); err == nil || !strings.Contains(err.Error(), "spec.drain.interval") {
		t.Errorf("an undecodable stamped manifest: want refused by the schema naming spec.drain.interval, got %v", err)
	}
	if got := calls() - before; got != 1 {
		t.Errorf("an undecodable manifest: want 1 call (the mutating webhook's, leaving it to the schema), got %g", got)
	}

	// A selector's values have no bound in the schema: past the mutating
	// webhook's, the validating webhook judges the create.
	values := make([]string, 129)
	for i := range values {
		values[i] = fmt.Sprint("team-", i)
	}
	many := func(name, backend string) *v1.Buckety {
		b := stamped(name, backend)
		b.Spec.Sharing = []v1.SharingRule{{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: values}}}, Roles: []v1.Role{v1.RoleReadOnly}}}
		return b
	}
	before = calls()
	if err := c.Create(ctx, many("wide", "kafak")); err == nil || !strings.Contains(err.Error(), `admission webhook "bucketies.buckety.yolean.se" denied the request`) || !strings.Contains(err.Error(), `spec.backend: Invalid value: "kafak"`) {
		t.Errorf("a long selector with an unknown backend: want refused by the validating webhook naming spec.backend, got %v", err)
	}
	if got := calls() - before; got != 2 {
		t.Errorf("a long selector: want 2 calls (left to the schema, then judged), got %g", got)
	}
	// A create by generateName is named after the mutating webhooks: the
	// validating webhook judges it under its name.
	before = calls()
	gen := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{GenerateName: "orders-", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "3"}}}
	if err := c.Create(ctx, gen, client.DryRunAll); err != nil || !strings.HasPrefix(gen.Name, "orders-") {
		t.Errorf("a create by generateName: want admitted under a generated name, got %q, %v", gen.Name, err)
	}
	if got := calls() - before; got != 2 {
		t.Errorf("a create by generateName: want 2 calls (left to the schema, then judged), got %g", got)
	}
	gen = &v1.Buckety{ObjectMeta: metav1.ObjectMeta{GenerateName: "orders-", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafak"}}
	if err := c.Create(ctx, gen, client.DryRunAll); err == nil || !strings.Contains(err.Error(), `Buckety.buckety.yolean.se "orders-`) || !strings.Contains(err.Error(), `spec.backend: Invalid value: "kafak"`) {
		t.Errorf("a create by generateName with an unknown backend: want refused under its generated name naming spec.backend, got %v", err)
	}

	// Judged whole: the verdict's own bound on a selector's values, which
	// the schema does not have.
	before = calls()
	if err := c.Create(ctx, many("wide", "kafka")); err == nil || !strings.Contains(err.Error(), "spec.sharing[0].namespaceSelector.matchExpressions[0].values: Too many: 129") {
		t.Errorf("a long selector: want refused by the validating webhook naming the values' bound, got %v", err)
	}
	if got := calls() - before; got != 2 {
		t.Errorf("a long selector, again: want 2 calls, got %g", got)
	}

	// The earlier release's mutating configuration calls the /mutate-
	// paths: while a release rolls out, they judge as the /admit- ones do
	// (that configuration's validating webhook judges too).
	for _, path := range []string{appwebhook.PathAdmitBuckety, appwebhook.PathStampBuckety} {
		if allowed, msg := review(t, w, path, stamped("copied", "kafak")); allowed || !strings.Contains(msg, `spec.backend: Invalid value: "kafak"`) {
			t.Errorf("%s: want a create with an unknown backend refused naming spec.backend, got allowed %v, %q", path, allowed, msg)
		}
	}
}

// review posts obj's CREATE to the webhook's path as the API server would,
// and returns its answer.
func review(t *testing.T, w *webhookProcess, path string, obj client.Object) (bool, string) {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &admissionv1.AdmissionRequest{
		UID: "r1", Kind: metav1.GroupVersionKind{Group: v1.GroupVersion.Group, Version: v1.GroupVersion.Version, Kind: "Buckety"},
		Resource: metav1.GroupVersionResource{Group: v1.GroupVersion.Group, Version: v1.GroupVersion.Version, Resource: "bucketies"},
		Name:     obj.GetName(), Namespace: obj.GetNamespace(), Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.CA.CertPEM)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	resp, err := hc.Post("https://"+w.addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		t.Fatalf("%s: want an AdmissionReview answer, got status %s, %v", path, resp.Status, err)
	}
	msg := ""
	if out.Response.Result != nil {
		msg = out.Response.Result.Message
	}
	return out.Response.Allowed, msg
}

// admissions is what the webhook answered for kind and operation, summed
// over its results (buckety_admission_requests_total).
func (w *webhookProcess) admissions(t *testing.T, kind, op string) float64 {
	t.Helper()
	var n float64
	for _, r := range []string{appwebhook.ResultAllowed, appwebhook.ResultDenied, appwebhook.ResultError} {
		v, ok := w.metric(t, fmt.Sprintf(`buckety_admission_requests_total{kind=%q,operation=%q,result=%q}`, kind, op, r))
		if !ok {
			t.Fatalf("want buckety_admission_requests_total for %s %s %s on the webhook's /metrics", kind, op, r)
		}
		n += v
	}
	return n
}
