package shard

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// TestWebhookConditionSeesTheSlotLabelAdded: the deployed validating
// webhooks' match conditions, evaluated as the API server does, call the
// webhook for an update that adds the slot label, whatever its value: the
// empty value once read as the label's absence, so a metadata-only update
// setting it skipped the webhook, and the object left every shard's cache.
// An update that keeps the label as it was (or leaves it out), spec
// unchanged, is still not sent.
func TestWebhookConditionSeesTheSlotLabelAdded(t *testing.T) {
	file := filepath.Join("..", "..", "deploy", "kustomize", "base", "webhook", "validatingwebhookconfiguration.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &vwc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(vwc.Webhooks) == 0 {
		t.Fatalf("%s: no webhooks", file)
	}
	compiler := plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	gvk := schema.GroupVersionKind{Group: "buckety.yolean.se", Version: "v1alpha1", Kind: "Buckety"}
	gvr := gvk.GroupVersion().WithResource("bucketies")
	object := func(labels map[string]any, backend string) *unstructured.Unstructured {
		meta := map[string]any{"namespace": "payments", "name": "orders"}
		if labels != nil {
			meta["labels"] = labels
		}
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": meta, "spec": map[string]any{"backend": backend}}}
		u.SetGroupVersionKind(gvk)
		return u
	}
	for _, h := range vwc.Webhooks {
		t.Run(h.Name, func(t *testing.T) {
			exprs := make([]plugincel.ExpressionAccessor, len(h.MatchConditions))
			for i, mc := range h.MatchConditions {
				exprs[i] = &matchconditions.MatchCondition{Name: mc.Name, Expression: mc.Expression}
			}
			filter := compiler.CompileCondition(exprs, plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions)
			if errs := filter.CompilationErrors(); len(errs) > 0 {
				t.Fatalf("compile: %v", errs)
			}
			m := matchconditions.NewMatcher(filter, h.FailurePolicy, "webhook", "validating", h.Name)
			for _, c := range []struct {
				name     string
				op       admission.Operation
				old, obj *unstructured.Unstructured
				calls    bool
			}{
				{"update adding the empty slot label", admission.Update, object(nil, "kafka"), object(map[string]any{SlotLabel: ""}, "kafka"), true},
				{"update adding the empty slot label to other labels", admission.Update, object(map[string]any{"team": "a"}, "kafka"), object(map[string]any{"team": "a", SlotLabel: ""}, "kafka"), true},
				{"update adding a slot label", admission.Update, object(nil, "kafka"), object(map[string]any{SlotLabel: "3"}, "kafka"), true},
				{"update emptying the slot label", admission.Update, object(map[string]any{SlotLabel: "3"}, "kafka"), object(map[string]any{SlotLabel: ""}, "kafka"), true},
				{"update removing the slot label", admission.Update, object(map[string]any{SlotLabel: "3"}, "kafka"), object(map[string]any{"team": "a"}, "kafka"), true},
				{"update of spec", admission.Update, object(nil, "kafka"), object(nil, "s3"), true},
				{"create", admission.Create, nil, object(map[string]any{SlotLabel: ""}, "kafka"), true},
				{"update keeping the slot label", admission.Update, object(map[string]any{SlotLabel: "3"}, "kafka"), object(map[string]any{SlotLabel: "3", "team": "a"}, "kafka"), false},
				{"update keeping the empty slot label", admission.Update, object(map[string]any{SlotLabel: ""}, "kafka"), object(map[string]any{SlotLabel: "", "team": "a"}, "kafka"), false},
				{"update without the slot label", admission.Update, object(nil, "kafka"), object(map[string]any{"team": "a"}, "kafka"), false},
			} {
				var old runtime.Object // nil, not a nil *Unstructured, on create
				if c.old != nil {
					old = c.old
				}
				attr := admission.NewAttributesRecord(c.obj, old, gvk, "payments", "orders", gvr, "", c.op, nil, false, nil)
				va := &admission.VersionedAttributes{Attributes: attr, VersionedObject: c.obj, VersionedOldObject: old, VersionedKind: gvk}
				got := m.Match(context.Background(), va, nil, nil)
				if got.Error != nil {
					t.Errorf("%s: %v", c.name, got.Error)
					continue
				}
				if got.Matches != c.calls {
					t.Errorf("%s: webhook called: %v, want %v", c.name, got.Matches, c.calls)
				}
			}
		})
	}
}
