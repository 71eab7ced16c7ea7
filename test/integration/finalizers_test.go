package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	bktobjects "github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestManyFinalizersAreKept: a Buckety and its access that a tenant gave
// more finalizers than the controller's cache keeps (each object would
// otherwise cost its size in every replica; bktobjects.MaxCachedFinalizers),
// duplicates among them. The controller adds its own finalizer and, at the
// deletion, removes its own alone, by position: every other stays, and
// with them the objects, as their owners' finalizers say. A merge patch of
// the cached list would have replaced them all.
func TestManyFinalizersAreKept(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	others := make([]string, 0, 3*bktobjects.MaxCachedFinalizers)
	for i := range 2 * bktobjects.MaxCachedFinalizers {
		others = append(others, fmt.Sprintf("example.com/keep-%d", i))
	}
	for range bktobjects.MaxCachedFinalizers {
		others = append(others, "example.com/dup")
	}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns, Finalizers: slices.Clone(others)},
		Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}}
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Finalizers: slices.Clone(others)},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}}
	create(t, b)
	create(t, a)
	t.Cleanup(func() {
		for _, o := range []client.Object{a, b} {
			p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
			if err := k8s.Patch(context.Background(), o, p); client.IgnoreNotFound(err) != nil {
				t.Errorf("release %s: %v", o.GetName(), err)
			}
		}
	})
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	for _, o := range []client.Object{b, a} {
		live := o.DeepCopyObject().(client.Object)
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), live); err != nil {
			t.Fatal(err)
		}
		f := live.GetFinalizers()
		if got := slices.DeleteFunc(slices.Clone(f), func(s string) bool { return s == v1.Finalizer }); !slices.Equal(got, others) || len(f) != len(others)+1 {
			t.Errorf("%s: want the %d others kept and buckety's added once, got %d: %v", o.GetName(), len(others), len(f), f)
		}
	}
	for _, o := range []client.Object{a, b} {
		if err := k8s.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range []client.Object{a, b} {
		live := o.DeepCopyObject().(client.Object)
		wait.For(t, waitTimeout, o.GetName()+" released by buckety, the others' finalizers kept", func() (bool, string) {
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(o), live); err != nil {
				return false, err.Error()
			}
			f := live.GetFinalizers()
			return !slices.Contains(f, v1.Finalizer) && slices.Equal(f, others), fmt.Sprintf("%d finalizers, buckety's among them: %v", len(f), slices.Contains(f, v1.Finalizer))
		})
	}
}
