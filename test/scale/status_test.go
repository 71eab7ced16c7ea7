package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// statusCost is what one status write of a Buckety carrying every
// declared condition costs the API server, with the conditions as the CRD
// declares them (one atomic list) and as a map keyed by type (the CRDs
// before conditions went atomic), timed the way the floor is.
type statusCost struct {
	atomicPerSec, mapPerSec float64
	atomicBytes, mapBytes   int
}

// measureStatusCost creates n Bucketies (no webhook or controller runs
// yet) and writes each one's status with every condition of a Ready
// Buckety, with workers concurrent clients, twice per list type,
// alternating; the CRD is switched to a map and back for each of the map's
// runs, and every Buckety is deleted. It checks that each list type is in effect
// (managedFields has one field for the conditions, or one per condition)
// before it reports a rate.
func measureStatusCost(t *testing.T, e *env, n int) statusCost {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	key := client.ObjectKey{Name: "bucketies.buckety.yolean.se"}
	if err := e.k8s.Get(ctx, key, crd); err != nil {
		t.Fatal(err)
	}
	generated := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"]
	if generated.XListType == nil || *generated.XListType != "atomic" {
		t.Fatalf("CRD bucketies: want status.conditions atomic, got %v", generated.XListType)
	}
	setConditions := func(schema apiextensionsv1.JSONSchemaProps) {
		t.Helper()
		if err := e.k8s.Get(ctx, key, crd); err != nil {
			t.Fatal(err)
		}
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["status"].Properties["conditions"] = schema
		if err := e.k8s.Update(ctx, crd); err != nil {
			t.Fatalf("CRD bucketies: %v", err)
		}
	}
	asMap := *generated.DeepCopy()
	mapType := "map"
	asMap.XListType, asMap.XListMapKeys = &mapType, []string{"type"}

	status := v1.BucketyStatus{Backend: "kafka", Driver: "kadm", DriverBuildVersion: "0.5.0", Provenance: v1.ProvenanceCreated, ObservedGeneration: 1}
	major := int64(0)
	status.DriverMajor = &major
	for _, d := range v1.BucketyConditions {
		c := metav1.Condition{Type: d.Type, Status: metav1.ConditionFalse, ObservedGeneration: 1, LastTransitionTime: metav1.Now(),
			Reason: v1.ReasonAsExpected, Message: "the backend resource matches spec.parameters"}
		if d.Polarity == v1.Positive {
			c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonReconciled
		}
		status.Conditions = append(status.Conditions, c)
	}

	obj := func(ns, name string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "1", "config.retention.ms": retention},
				DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: name + "-creds"}}}
	}
	write := func(b *v1.Buckety) error {
		base := b.DeepCopy()
		b.Status = *status.DeepCopy()
		return e.k8s.Status().Patch(ctx, b, client.MergeFrom(base))
	}
	// inEffect writes the status of a new object in ns until its
	// managedFields show the list type (the API server serves a changed
	// schema within seconds) and returns the stored object's size.
	probes := 0
	inEffect := func(ns string, atomic bool) int {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); ; {
			probes++
			b := obj(ns, fmt.Sprintf("probe-%d", probes))
			if err := e.k8s.Create(ctx, b); err != nil {
				t.Fatal(err)
			}
			if err := write(b); err != nil {
				t.Fatalf("status write in %s: %v", ns, err)
			}
			if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
				t.Fatal(err)
			}
			f := ""
			for _, m := range b.ManagedFields {
				if m.Subresource == "status" && m.FieldsV1 != nil {
					f = m.FieldsV1.GetRawString()
				}
			}
			if strings.Contains(f, "k:{") != atomic {
				raw, err := json.Marshal(b)
				if err != nil {
					t.Fatal(err)
				}
				return len(raw)
			}
			if time.Now().After(deadline) {
				t.Fatalf("status conditions of %s (atomic %v) not in effect after 60s: managedFields %s", ns, atomic, f)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// run times n status writes with the list type in effect, in a
	// namespace of its own.
	run := func(label string, atomic bool) (time.Duration, int) {
		t.Helper()
		ns := "status-" + label
		if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		size := inEffect(ns, atomic)
		objs := make([]*v1.Buckety, n)
		if err := parallel(n, workers, func(i int) error {
			objs[i] = obj(ns, fmt.Sprintf("s%05d", i))
			return e.k8s.Create(ctx, objs[i])
		}); err != nil {
			t.Fatalf("create Bucketies (%s): %v", label, err)
		}
		start := time.Now()
		if err := parallel(n, workers, func(i int) error { return write(objs[i]) }); err != nil {
			t.Fatalf("status writes (%s): %v", label, err)
		}
		took := time.Since(start)
		deleteCollection(t, e.k8s, ns, &v1.Buckety{}, &v1.BucketyList{})
		return took, size
	}
	// Twice each, alternating, so that a moment of load elsewhere on the
	// machine does not fall on one list type only.
	var atomicTook, mapTook time.Duration
	var c statusCost
	for i := range 2 {
		took, size := run(fmt.Sprintf("atomic-%d", i), true)
		atomicTook, c.atomicBytes = atomicTook+took, size
		setConditions(asMap)
		took, size = run(fmt.Sprintf("map-%d", i), false)
		mapTook, c.mapBytes = mapTook+took, size
		setConditions(generated)
	}
	// Everything measured after sees the CRD as generated.
	if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "status-after"}}); err != nil {
		t.Fatal(err)
	}
	inEffect("status-after", true)
	deleteCollection(t, e.k8s, "status-after", &v1.Buckety{}, &v1.BucketyList{})
	c.atomicPerSec, c.mapPerSec = float64(2*n)/atomicTook.Seconds(), float64(2*n)/mapTook.Seconds()
	t.Logf("status writes of a Buckety with every condition: %.0f/s atomic (%d bytes), %.0f/s as a map (%d bytes)", c.atomicPerSec, c.atomicBytes, c.mapPerSec, c.mapBytes)
	return c
}
