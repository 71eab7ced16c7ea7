package controller

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/shard"
)

func TestStripForCache(t *testing.T) {
	meta := func() metav1.ObjectMeta {
		yes := true
		return metav1.ObjectMeta{Name: "x", Namespace: "a",
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
			Annotations:     map[string]string{lastApplied: `{"spec":{"backend":"kafka"}}`, "team": "orders"},
			Labels:          map[string]string{"gen": "003", "junk": strings.Repeat("x", 63), v1.ImplicitLabel: "true", shard.SlotLabel: "17"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "Thing", Name: "a"}, {Kind: "Buckety", Name: "b", Controller: &yes}},
			Finalizers:      []string{v1.Finalizer, "example.com/other"}}
	}
	withName := func(o *v1.Buckety) *v1.Buckety { o.Spec.Name = "${namespace}.v${label['gen']}"; return o }
	cases := []struct {
		name            string
		obj             client.Object
		wantAnnotations map[string]string
		wantLabels      map[string]string
		wantOwners      int
	}{
		{"Buckety: only the labels its template reads and the slot, no annotations, no owners", withName(&v1.Buckety{ObjectMeta: meta()}), nil, map[string]string{"gen": "003", shard.SlotLabel: "17"}, 0},
		{"Buckety without a template keeps the slot label alone", &v1.Buckety{ObjectMeta: meta()}, nil, map[string]string{shard.SlotLabel: "17"}, 0},
		{"BucketyAccess: the implicit and slot labels and its controller", &v1.BucketyAccess{ObjectMeta: meta()}, nil, map[string]string{v1.ImplicitLabel: "true", shard.SlotLabel: "17"}, 1},
		{"claim keeps its annotations and labels: it is updated whole", &v1.BucketyClaim{ObjectMeta: meta()}, map[string]string{lastApplied: `{"spec":{"backend":"kafka"}}`, "team": "orders"}, meta().Labels, 2},
		{"another kind loses only last-applied", &corev1.ConfigMap{ObjectMeta: meta()}, map[string]string{"team": "orders"}, meta().Labels, 2},
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
		if !maps.Equal(o.GetLabels(), c.wantLabels) {
			t.Errorf("%s: want labels %v, got %v", c.name, c.wantLabels, o.GetLabels())
		}
		if len(o.GetOwnerReferences()) != c.wantOwners {
			t.Errorf("%s: want %d owner references, got %v", c.name, c.wantOwners, o.GetOwnerReferences())
		}
		if len(o.GetFinalizers()) != 2 {
			t.Errorf("%s: want finalizers kept whole (a merge patch replaces the list), got %v", c.name, o.GetFinalizers())
		}
		if o.GetName() != "x" || o.GetNamespace() != "a" {
			t.Errorf("%s: want the identity kept, got %s/%s", c.name, o.GetNamespace(), o.GetName())
		}
	}
	if got, err := stripForCache("not an object"); err != nil || got != "not an object" {
		t.Errorf("want anything else passed through, got %v, %v", got, err)
	}
}

// TestStripForCacheTrimsFinalizers: a Buckety or an access a tenant gave
// more than objects.MaxCachedFinalizers finalizers (thousands, duplicates)
// is cached with buckety's own alone, and where it stands in the full
// list, for AddFinalizer and RemoveFinalizer to patch by position; a
// claim, which only the controller writes, is kept whole.
func TestStripForCacheTrimsFinalizers(t *testing.T) {
	many := func(ours int) []string {
		f := make([]string, 5000)
		for i := range f {
			f[i] = "example.com/x"
		}
		if ours >= 0 {
			f[ours] = v1.Finalizer
		}
		return f
	}
	for _, c := range []struct {
		name string
		obj  client.Object
		want []string
		at   int
	}{
		{"Buckety holding buckety's at 4321", &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Finalizers: many(4321)}}, []string{v1.Finalizer}, 4321},
		{"access without buckety's", &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Finalizers: many(-1)}}, nil, -1},
	} {
		out, err := stripForCache(c.obj)
		if err != nil {
			t.Fatal(err)
		}
		o := out.(client.Object)
		if !slices.Equal(o.GetFinalizers(), c.want) {
			t.Errorf("%s: want finalizers %v cached, got %d", c.name, c.want, len(o.GetFinalizers()))
		}
		if at, ok := objects.TrimmedFinalizer(o); !ok || at != c.at {
			t.Errorf("%s: want buckety's place %d kept, got %d %v", c.name, c.at, at, ok)
		}
	}
	few := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Finalizers: many(-1)[:objects.MaxCachedFinalizers]}}
	out, err := stripForCache(few)
	if err != nil {
		t.Fatal(err)
	}
	if o := out.(client.Object); len(o.GetFinalizers()) != objects.MaxCachedFinalizers || len(o.GetAnnotations()) != 0 {
		t.Errorf("%d finalizers: want them kept whole and unmarked, got %d and %v", objects.MaxCachedFinalizers, len(o.GetFinalizers()), o.GetAnnotations())
	}
	claim := &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Finalizers: many(7)}}
	if out, err := stripForCache(claim); err != nil || len(out.(client.Object).GetFinalizers()) != 5000 {
		t.Errorf("a claim: want its finalizers kept whole, got %v", err)
	}
}

// TestStripSecret: a Secret in the cache, whatever a tenant put in it, is
// reduced to what ownership checks read.
func TestStripSecret(t *testing.T) {
	yes := true
	om := metav1.ObjectMeta{Name: "s", Namespace: "a", UID: "u", ResourceVersion: "7",
		Labels:          map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: "reader", "junk": "x"},
		Annotations:     map[string]string{"big": strings.Repeat("x", 1<<16)},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Thing", Name: "t"}, {Kind: "BucketyAccess", Name: "reader", Controller: &yes}},
		Finalizers:      []string{"example.com/x"}}
	full, err := stripSecret(&corev1.Secret{ObjectMeta: *om.DeepCopy(), Data: map[string][]byte{"k": make([]byte, 1<<20)}, StringData: map[string]string{"s": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	partial, err := stripSecret(&metav1.PartialObjectMetadata{ObjectMeta: *om.DeepCopy()})
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]any{"Secret": full, "metadata": partial} {
		o := out.(client.Object)
		if len(o.GetAnnotations()) != 0 || len(o.GetFinalizers()) != 0 || len(o.GetLabels()) != 2 || len(o.GetOwnerReferences()) != 1 || o.GetOwnerReferences()[0].Kind != "BucketyAccess" {
			t.Errorf("%s: want only buckety's two labels and the controller reference, got labels %v, annotations %d, owners %v, finalizers %v", name, o.GetLabels(), len(o.GetAnnotations()), o.GetOwnerReferences(), o.GetFinalizers())
		}
		if o.GetUID() != "u" || o.GetResourceVersion() != "7" {
			t.Errorf("%s: want UID and resourceVersion kept, got %s %s", name, o.GetUID(), o.GetResourceVersion())
		}
	}
	if s := full.(*corev1.Secret); s.Data != nil || s.StringData != nil {
		t.Error("want a full Secret's data dropped: the access reconciler reads data fresh")
	}
}
