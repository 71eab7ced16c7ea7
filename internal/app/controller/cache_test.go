package controller

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

func TestStripForCache(t *testing.T) {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "x", Namespace: "a",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
			Annotations:   map[string]string{lastApplied: `{"spec":{"backend":"kafka"}}`, "team": "orders"}}
	}
	cases := []struct {
		name            string
		obj             client.Object
		wantAnnotations map[string]string
	}{
		{"Buckety", &v1.Buckety{ObjectMeta: meta()}, map[string]string{"team": "orders"}},
		{"BucketyAccess", &v1.BucketyAccess{ObjectMeta: meta()}, map[string]string{"team": "orders"}},
		{"Secret", &corev1.Secret{ObjectMeta: meta(), Data: map[string][]byte{"topic": []byte("t")}}, map[string]string{"team": "orders"}},
		{"claim keeps its annotations: it is updated whole", &v1.BucketyClaim{ObjectMeta: meta()}, map[string]string{lastApplied: `{"spec":{"backend":"kafka"}}`, "team": "orders"}},
	}
	for _, c := range cases {
		out, err := stripForCache(c.obj)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		o := out.(client.Object)
		if len(o.GetManagedFields()) != 0 {
			t.Errorf("%s: want managedFields stripped, got %v", c.name, o.GetManagedFields())
		}
		if !maps.Equal(o.GetAnnotations(), c.wantAnnotations) {
			t.Errorf("%s: want annotations %v, got %v", c.name, c.wantAnnotations, o.GetAnnotations())
		}
		if o.GetName() != "x" || o.GetNamespace() != "a" {
			t.Errorf("%s: want the identity kept, got %s/%s", c.name, o.GetNamespace(), o.GetName())
		}
	}
	if s, _ := stripForCache(&corev1.Secret{Data: map[string][]byte{"topic": []byte("t")}}); string(s.(*corev1.Secret).Data["topic"]) != "t" {
		t.Error("want a Secret's data kept: the access reconciler compares it")
	}
	if got, err := stripForCache("not an object"); err != nil || got != "not an object" {
		t.Errorf("want anything else passed through, got %v, %v", got, err)
	}
}
