package admission

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// stamped runs obj's create (or op) through the Stamp handler of kind,
// applies the JSON patch it answers with to the object's JSON as the API
// server would, and decodes the result into out.
func stamped(t *testing.T, kind string, op admissionv1.Operation, obj, out client.Object) admission.Response {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	resp := Stamp{Kind: kind, Decoder: admission.NewDecoder(s)}.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: "tenant1", Name: obj.GetName(), Object: runtime.RawExtension{Raw: raw}}})
	if !resp.Allowed {
		t.Fatalf("want allowed, got %+v", resp.Result)
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
	if err := json.Unmarshal(res, out); err != nil {
		t.Fatal(err)
	}
	return resp
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

// TestStampLeavesAnUndecodableObjectToTheSchema: a Buckety whose JSON the
// typed object cannot hold (a drain interval that does not parse) is
// admitted unstamped, so that the API server's schema validation, which
// runs next, refuses it naming the field; the decoder's own error names
// none ("time: invalid duration").
func TestStampLeavesAnUndecodableObjectToTheSchema(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"name":"soon"},"spec":{"backend":"kafka","drain":{"request":"r1","interval":"soon"}}}`)
	resp := Stamp{Kind: "Buckety", Decoder: admission.NewDecoder(s)}.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: "tenant1", Name: "soon", Object: runtime.RawExtension{Raw: raw}}})
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("want allowed unstamped, got allowed %v, patches %v, result %+v", resp.Allowed, resp.Patches, resp.Result)
	}
}
