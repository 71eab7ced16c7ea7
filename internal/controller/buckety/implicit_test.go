package buckety

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestImplicitAccessNameTooLong: a provisioned Buckety with
// spec.defaultAccess whose name cannot name an access (admitted before the
// webhook checked it, or without the webhook) gets no implicit access,
// which could never get its Secret, and its Ready says why, naming
// metadata.name; one of 63 characters gets its access.
func TestImplicitAccessNameTooLong(t *testing.T) {
	s := testScheme(t)
	ctx := context.Background()
	for _, n := range []int{63, 64} {
		c := fake.NewClientBuilder().WithScheme(s).Build()
		r := &Reconciler{Client: c}
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "n" + strings.Repeat("a", n-1), UID: "b-uid", Generation: 1},
			Spec: v1.BucketySpec{Backend: "kafka", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "creds"}},
			Status: v1.BucketyStatus{BackendResourceName: "t", Conditions: []metav1.Condition{
				{Type: v1.ConditionProvisioned, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: v1.ReasonReconciled}}}}
		f := &facts{provisioned: true, accessesChecked: true}
		if err := r.reconcileImplicit(ctx, b, nil, f); err != nil {
			t.Fatalf("%d characters: %v", n, err)
		}
		var accesses v1.BucketyAccessList
		if err := c.List(ctx, &accesses); err != nil {
			t.Fatal(err)
		}
		if n == 63 {
			if f.implicitErr != "" || len(accesses.Items) != 1 {
				t.Errorf("63 characters: want the implicit access created, got %d accesses, %q", len(accesses.Items), f.implicitErr)
			}
			continue
		}
		if len(accesses.Items) != 0 {
			t.Errorf("64 characters: want no implicit access created, got %d", len(accesses.Items))
		}
		ready := find(conditions(b, f), v1.ConditionReady)
		const want = "spec.defaultAccess: the implicit BucketyAccess takes the Buckety's name, which is 64 characters, more than the 63 a label value holds: buckety labels the access's Secret with the access's name (buckety.yolean.se/access); no implicit access is created"
		if ready.Status != metav1.ConditionFalse || ready.Reason != v1.ReasonAccessesNotReady || !strings.Contains(ready.Message, want) {
			t.Errorf("64 characters: want Ready=False (%s) saying %q, got %s (%s: %s)", v1.ReasonAccessesNotReady, want, ready.Status, ready.Reason, ready.Message)
		}
	}
}

// TestImplicitAccessRefusedIsNotReady: a provisioned Buckety whose
// implicit access cannot be created (the access webhook refuses it for
// the namespace's access limit, a ResourceQuota on bucketyaccesses, the
// webhook down) is not Ready: Ready says why, with the refusal, where it
// said "in sync" and kubectl wait returned with no Secret ever to come.
func TestImplicitAccessRefusedIsNotReady(t *testing.T) {
	ctx := context.Background()
	r := accessesEnv(t)
	refusal := `admission webhook "bucketyaccesses.buckety.yolean.se" denied the request: spec: namespace team holds 5 accesses on backend kafka, its limit (limits.accessesPerNamespace)`
	r.Client = interceptor.NewClient(r.Client.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*v1.BucketyAccess); ok {
				return apierrors.NewForbidden(schema.GroupResource{Group: v1.GroupVersion.Group, Resource: "bucketyaccesses"}, obj.GetName(), errors.New(refusal))
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orders", UID: "b-uid", Generation: 1},
		Spec: v1.BucketySpec{Backend: "kafka", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "creds"}},
		Status: v1.BucketyStatus{BackendResourceName: "t", Conditions: []metav1.Condition{
			{Type: v1.ConditionProvisioned, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: v1.ReasonReconciled}}}}
	f := &facts{provisioned: true}
	if err := r.reconcileAccesses(ctx, b, f); err == nil {
		t.Fatal("want the refused create's error, for the pass to be retried")
	}
	ready := find(conditions(b, f), v1.ConditionReady)
	if ready.Status == metav1.ConditionTrue || ready.Reason != v1.ReasonAccessesNotReady || !strings.Contains(ready.Message, "limits.accessesPerNamespace") {
		t.Errorf("want Ready=False (%s) with the refusal, got %s (%s: %s)", v1.ReasonAccessesNotReady, ready.Status, ready.Reason, ready.Message)
	}
}
