package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsyaml "sigs.k8s.io/yaml"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// stamped runs obj's create (or op) through the Admit handler of kind with
// a verdict that admits, applies the JSON patch it answers with to the
// object's JSON as the API server would, and decodes the result into out.
func stamped(t *testing.T, kind string, op admissionv1.Operation, obj, out client.Object) admission.Response {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	resp := admitter(t, kind, func(client.Object) (admission.Warnings, error) { return nil, nil }).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: "tenant1", Name: obj.GetName(), Object: runtime.RawExtension{Raw: raw}}})
	if !resp.Allowed {
		t.Fatalf("want allowed, got %+v", resp.Result)
	}
	if err := json.Unmarshal(patched(t, raw, resp), out); err != nil {
		t.Fatal(err)
	}
	return resp
}

// admitter is the Admit handler of kind (Buckety or BucketyAccess) with the
// verdict judge.
func admitter(t *testing.T, kind string, judge func(client.Object) (admission.Warnings, error)) admission.Handler {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	d := admission.NewDecoder(s)
	switch kind {
	case "Buckety":
		return Admit[*v1.Buckety]{Kind: kind, Decoder: d, New: func() *v1.Buckety { return &v1.Buckety{} }, Slot: shard.BucketyValue,
			Validate: func(_ context.Context, b *v1.Buckety) (admission.Warnings, error) { return judge(b) }}
	case "BucketyAccess":
		return Admit[*v1.BucketyAccess]{Kind: kind, Decoder: d, New: func() *v1.BucketyAccess { return &v1.BucketyAccess{} }, Slot: shard.AccessValue,
			Validate: func(_ context.Context, a *v1.BucketyAccess) (admission.Warnings, error) { return judge(a) }}
	}
	t.Fatalf("no kind %s", kind)
	return nil
}

// patched is raw with the response's JSON patch applied, as the API server
// applies it.
func patched(t *testing.T, raw []byte, resp admission.Response) []byte {
	t.Helper()
	if len(resp.Patches) == 0 {
		return raw
	}
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatalf("patch %s: %v", ops, err)
	}
	res, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("apply %s to %s: %v", ops, raw, err)
	}
	return res
}

// TestStamp: a new Buckety or access is given buckety's finalizer and its
// slot label, whatever it already carries, and nothing else changes; an
// update is left alone.
func TestStamp(t *testing.T) {
	home := shard.SlotValue("tenant1")
	plain := &v1.Buckety{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Buckety"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	for _, c := range []struct {
		name       string
		obj        *v1.Buckety
		finalizers []string
		labels     map[string]string
	}{
		{"bare", plain, []string{v1.Finalizer}, map[string]string{shard.SlotLabel: home}},
		{"other labels and finalizers kept", func() *v1.Buckety {
			b := plain.DeepCopy()
			b.Labels = map[string]string{"app": "shop"}
			b.Finalizers = []string{"example.com/keep"}
			return b
		}(), []string{"example.com/keep", v1.Finalizer}, map[string]string{"app": "shop", shard.SlotLabel: home}},
		{"a tenant's slot label is the object's", func() *v1.Buckety {
			b := plain.DeepCopy()
			b.Labels = map[string]string{shard.SlotLabel: "7", "app": "shop"}
			return b
		}(), []string{v1.Finalizer}, map[string]string{"app": "shop", shard.SlotLabel: home}},
		{"shared with other namespaces: every shard reads it", func() *v1.Buckety {
			b := plain.DeepCopy()
			b.Spec.Sharing = []v1.SharingRule{{Namespace: "tenant2"}}
			return b
		}(), []string{v1.Finalizer}, map[string]string{shard.SlotLabel: shard.Everywhere}},
		{"already stamped: no patch", func() *v1.Buckety {
			b := plain.DeepCopy()
			b.Namespace = "tenant1"
			b.Labels = map[string]string{shard.SlotLabel: home}
			b.Finalizers = []string{v1.Finalizer}
			return b
		}(), []string{v1.Finalizer}, map[string]string{shard.SlotLabel: home}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := &v1.Buckety{}
			resp := stamped(t, "Buckety", admissionv1.Create, c.obj, got)
			if !slices.Equal(got.Finalizers, c.finalizers) {
				t.Errorf("finalizers: want %v, got %v", c.finalizers, got.Finalizers)
			}
			if len(got.Labels) != len(c.labels) {
				t.Errorf("labels: want %v, got %v", c.labels, got.Labels)
			}
			for k, v := range c.labels {
				if got.Labels[k] != v {
					t.Errorf("label %s: want %q, got %q (%v)", k, v, got.Labels[k], got.Labels)
				}
			}
			if got.Spec.Backend != "kafka" || got.Name != "orders" {
				t.Errorf("want the rest of the object unchanged, got %+v", got)
			}
			if c.name == "already stamped: no patch" && len(resp.Patches) != 0 {
				t.Errorf("want no patch, got %v", resp.Patches)
			}
		})
	}

	t.Run("update", func(t *testing.T) {
		got := &v1.Buckety{}
		resp := stamped(t, "Buckety", admissionv1.Update, plain, got)
		if len(resp.Patches) != 0 || len(got.Finalizers) != 0 {
			t.Errorf("an update: want no patch, got %v", resp.Patches)
		}
	})

	for _, c := range []struct {
		name string
		ref  v1.BucketyReference
		slot string
	}{
		{"access of its namespace", v1.BucketyReference{Name: "orders"}, home},
		{"access naming another namespace's Buckety", v1.BucketyReference{Namespace: "tenant2", Name: "orders"}, shard.Everywhere},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &v1.BucketyAccess{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess"},
				ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Spec: v1.BucketyAccessSpec{BucketyRef: c.ref}}
			got := &v1.BucketyAccess{}
			stamped(t, "BucketyAccess", admissionv1.Create, a, got)
			if !slices.Equal(got.Finalizers, []string{v1.Finalizer}) || got.Labels[shard.SlotLabel] != c.slot {
				t.Errorf("want finalizer %s and slot %s, got %v %v", v1.Finalizer, c.slot, got.Finalizers, got.Labels)
			}
		})
	}
}

// TestAdmitJudgesTheStampedObject: a create is judged as it will be
// stored, stamped (a slot label the tenant wrote already the object's), and
// the verdict's refusal is the answer, with its status, its warnings and no
// patch; an admitted create carries the verdict's warnings with the stamp.
func TestAdmitJudgesTheStampedObject(t *testing.T) {
	b := &v1.Buckety{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Buckety"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Labels: map[string]string{shard.SlotLabel: "7"}}, Spec: v1.BucketySpec{Backend: "kafak"}}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "tenant1", Name: "orders", Object: runtime.RawExtension{Raw: raw}}}
	var seen *v1.Buckety
	refuse := func(o client.Object) (admission.Warnings, error) {
		seen = o.(*v1.Buckety).DeepCopy()
		return admission.Warnings{"w1"}, invalid("Buckety", o.GetName(), field.ErrorList{field.Invalid(field.NewPath("spec", "backend"), "kafak", "no such backend")})
	}
	resp := admitter(t, "Buckety", refuse).Handle(context.Background(), req)
	if seen == nil {
		t.Fatal("want the create judged")
	}
	if seen.Namespace != "tenant1" || !slices.Contains(seen.Finalizers, v1.Finalizer) || seen.Labels[shard.SlotLabel] != shard.SlotValue("tenant1") {
		t.Errorf("want the object judged stamped in its namespace, got namespace %q, finalizers %v, labels %v", seen.Namespace, seen.Finalizers, seen.Labels)
	}
	if resp.Allowed || len(resp.Patches) != 0 || resp.Result == nil || resp.Result.Code != 422 || !strings.Contains(resp.Result.Message, `spec.backend: Invalid value: "kafak": no such backend`) || !slices.Equal(resp.Warnings, []string{"w1"}) {
		t.Errorf("want refused with the verdict's 422 status, its warnings and no patch, got allowed %v, patches %v, result %+v, warnings %v", resp.Allowed, resp.Patches, resp.Result, resp.Warnings)
	}
	plain := admitter(t, "Buckety", func(client.Object) (admission.Warnings, error) { return nil, errors.New("plain") }).Handle(context.Background(), req)
	if plain.Allowed || plain.Result == nil || plain.Result.Message != "plain" {
		t.Errorf("want an error without a status refused with its text, got %+v", plain.Result)
	}
	admit := admitter(t, "Buckety", func(client.Object) (admission.Warnings, error) { return admission.Warnings{"w2"}, nil }).Handle(context.Background(), req)
	got := &v1.Buckety{}
	if err := json.Unmarshal(patched(t, raw, admit), got); err != nil {
		t.Fatal(err)
	}
	if !admit.Allowed || !slices.Equal(admit.Warnings, []string{"w2"}) || !slices.Equal(got.Finalizers, []string{v1.Finalizer}) || got.Labels[shard.SlotLabel] != shard.SlotValue("tenant1") {
		t.Errorf("want admitted, stamped, with the verdict's warning, got allowed %v, warnings %v, finalizers %v, labels %v", admit.Allowed, admit.Warnings, got.Finalizers, got.Labels)
	}
}

// TestAdmitLeavesToTheSchemaWhatItCannotHold: a create the typed object
// cannot hold (a drain interval that does not parse: the schema's error
// names the field, the decoder's names none), with a list in spec past
// MaxSpecEntries or a string past MaxSpecString (which the schema refuses,
// and whose verdict would cost without bound: the naming template repeats
// the name and labels), with a name or label the API server's metadata
// validation refuses, or named by generateName (named only after the
// mutating webhooks), is admitted unjudged and unstamped, for the schema
// and then the validating webhook, which is called for a create without
// the stamp. A stamp its author wrote in is taken off, the finalizer in
// one operation however often it is listed, so it cannot pass for
// Admit's (and a slot label written in is not refused there, where
// Admit's stamp would have set it right). Values at the bounds are judged.
func TestAdmitLeavesToTheSchemaWhatItCannotHold(t *testing.T) {
	refs := func(n int) string {
		r := make([]string, n)
		for i := range r {
			r[i] = fmt.Sprintf(`{"name":"b%d"}`, i)
		}
		return "[" + strings.Join(r, ",") + "]"
	}
	for _, c := range []struct {
		name, kind, raw string
		judged          bool
		finalizers      []string
	}{
		{"undecodable", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"soon"},"spec":{"backend":"kafka","drain":{"request":"r1","interval":"soon"}}}`, false, nil},
		{"undecodable, stamped by its author", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"soon","finalizers":["example.com/keep","` + v1.Finalizer + `","example.com/too","` + v1.Finalizer + `"],"labels":{"` + shard.SlotLabel + `":"` + shard.SlotValue("tenant1") + `"}},"spec":{"backend":"kafka","drain":{"request":"r1","interval":"soon"}}}`, false, []string{"example.com/keep", "example.com/too"}},
		{"a list past the bound, stamped by its author", "BucketyAccess", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"BucketyAccess","metadata":{"name":"many","finalizers":["` + v1.Finalizer + `"]},"spec":{"bucketyRefs":` + refs(MaxSpecEntries+1) + `}}`, false, nil},
		{"a map past the bound, deep in spec", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"many"},"spec":{"backend":"kafka","defaultAccess":{"parameters":` + func() string {
			m := map[string]string{}
			for i := range MaxSpecEntries + 1 {
				m[fmt.Sprint("k", i)] = "v"
			}
			b, _ := json.Marshal(m)
			return string(b)
		}() + `}}}`, false, nil},
		{"a string past the bound", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"long"},"spec":{"backend":"kafka","name":"` + strings.Repeat("${name}", MaxSpecString/7+1) + `"}}`, false, nil},
		{"a name past the API server's bound", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"` + strings.Repeat("a", 254) + `"},"spec":{"backend":"kafka"}}`, false, nil},
		{"a label value the API server refuses", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"long","labels":{"a":"` + strings.Repeat("a", 64) + `"}},"spec":{"backend":"kafka"}}`, false, nil},
		{"a label key the API server refuses", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"long","labels":{"a b":"c"}},"spec":{"backend":"kafka"}}`, false, nil},
		{"generateName: named after the mutating webhooks", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"generateName":"orders-"},"spec":{"backend":"kafka"}}`, false, nil},
		{"a map key past the bound", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"long","labels":{"` + shard.SlotLabel + `":"7"}},"spec":{"backend":"kafka","parameters":{"` + strings.Repeat("k", MaxSpecString+1) + `":"v"}}}`, false, nil},
		{"a name at the bound", "Buckety", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"` + strings.Repeat("a", 253) + `","labels":{"example.com/a":"` + strings.Repeat("a", 63) + `"}},"spec":{"backend":"kafka","name":"` + strings.Repeat("a", MaxSpecString) + `"}}`, true, []string{v1.Finalizer}},
		{"a list at the bound", "BucketyAccess", `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"BucketyAccess","metadata":{"name":"many"},"spec":{"bucketyRefs":` + refs(MaxSpecEntries) + `}}`, true, []string{v1.Finalizer}},
	} {
		t.Run(c.name, func(t *testing.T) {
			judged := false
			resp := admitter(t, c.kind, func(client.Object) (admission.Warnings, error) { judged = true; return nil, nil }).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Namespace: "tenant1", Name: "x", Object: runtime.RawExtension{Raw: []byte(c.raw)}}})
			if !resp.Allowed || judged != c.judged {
				t.Fatalf("want allowed and judged %v, got allowed %v, judged %v, result %+v", c.judged, resp.Allowed, judged, resp.Result)
			}
			var got struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(patched(t, []byte(c.raw), resp), &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Metadata.Finalizers, c.finalizers) {
				t.Errorf("finalizers: want %v, got %v", c.finalizers, got.Metadata.Finalizers)
			}
			if !c.judged && len(resp.Patches) > 2 {
				t.Errorf("want at most two patch operations, the finalizers' and the label's (a remove per copy costs the API server a copy of the list each), got %v", resp.Patches)
			}
			if _, ok := got.Metadata.Labels[shard.SlotLabel]; ok != c.judged {
				t.Errorf("want the slot label set only when judged (Admit's stamp), got %v", got.Metadata.Labels)
			}
		})
	}
}

// TestMaxSpecEntriesBoundsTheSchemas: no list or map in the generated
// CRDs' specs of Buckety and BucketyAccess allows more than MaxSpecEntries
// entries, and no string more than MaxSpecString characters, so Admit judges every create the schema could admit with its
// bounds (a list without a bound in the schema, as a label selector's, is
// left to the schema and the validating webhook past it: a second call,
// never an unjudged object).
func TestMaxSpecEntriesBoundsTheSchemas(t *testing.T) {
	bounds := 0
	for _, f := range []string{"buckety.yolean.se_bucketies.yaml", "buckety.yolean.se_bucketyaccesses.yaml"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "kustomize", "base", "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := sigsyaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			spec, ok := v.Schema.OpenAPIV3Schema.Properties["spec"]
			if !ok {
				t.Fatalf("%s %s: no spec in the schema", f, v.Name)
			}
			var walk func(path string, s apiextensionsv1.JSONSchemaProps)
			walk = func(path string, s apiextensionsv1.JSONSchemaProps) {
				for _, m := range []*int64{s.MaxItems, s.MaxProperties} {
					if m != nil {
						bounds++
						if *m > MaxSpecEntries {
							t.Errorf("%s %s: %s allows %d entries, more than MaxSpecEntries (%d)", f, v.Name, path, *m, MaxSpecEntries)
						}
					}
				}
				if s.MaxLength != nil {
					bounds++
					if *s.MaxLength > MaxSpecString {
						t.Errorf("%s %s: %s allows %d characters, more than MaxSpecString (%d)", f, v.Name, path, *s.MaxLength, MaxSpecString)
					}
				}
				for k, p := range s.Properties {
					walk(path+"."+k, p)
				}
				if s.Items != nil && s.Items.Schema != nil {
					walk(path+"[]", *s.Items.Schema)
				}
				if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
					walk(path+"{}", *s.AdditionalProperties.Schema)
				}
			}
			walk("spec", spec)
		}
	}
	if bounds < 5 {
		t.Errorf("want the specs' bounds read (spec.bucketyRefs, spec.parameters, …), found %d", bounds)
	}
}
