package labeller

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// TestLabelReplacesAValueNoShardReads: an object whose slot label is
// present but empty (or otherwise read by no shard) is in no shard's
// cache, as one without the label is: the labeller gives it its slot, as
// it does one without the label; a valid value is left as it is.
func TestLabelReplacesAValueNoShardReads(t *testing.T) {
	scheme, err := objects.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	const ns = "payments"
	slot := func(v string) map[string]string {
		return map[string]string{shard.SlotLabel: v, v1.ManagedByLabel: v1.ManagedByValue}
	}
	own := shard.SlotValue(ns)
	objs := []client.Object{
		&v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "empty", Labels: slot("")}, Spec: v1.BucketySpec{Backend: "kafka"}},
		&v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bogus", Labels: slot("not-a-slot"), Finalizers: []string{v1.Finalizer}}, Spec: v1.BucketySpec{Backend: "kafka"}},
		&v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "labelled", Labels: slot(own)}, Spec: v1.BucketySpec{Backend: "kafka"}},
		&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "empty", Labels: slot("")}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "empty"}, CredentialsSecretName: "empty"}},
		&v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: "empty", Labels: slot("")}, Spec: v1.BucketyClaimSpec{Backend: "kafka", Owner: v1.ClaimOwner{Namespace: ns, Name: "empty", UID: "0"}}},
		&v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: "empty", Labels: slot("")}, Spec: v1.BucketyCredentialSpec{Owner: v1.ClaimOwner{Namespace: ns, Name: "empty", UID: "0"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "empty", Labels: slot("")}},
	}
	writes := map[string]int{}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes[obj.GetName()]++
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes[obj.GetName()]++
			return c.Update(ctx, obj, opts...)
		},
	})
	l := &Labeller{Scheme: scheme, Client: c, Log: testr.New(t)}
	ctx := context.Background()
	ks := kinds()
	for _, o := range objs {
		var k client.Object
		switch o.(type) {
		case *v1.Buckety:
			k = ks[0]
		case *v1.BucketyAccess:
			k = ks[1]
		case *v1.BucketyClaim:
			k = ks[2]
		case *v1.BucketyCredential:
			k = ks[3]
		default:
			k = ks[4]
		}
		key := client.ObjectKeyFromObject(o)
		writes[o.GetName()] = 0
		if err := l.label(ctx, c, k.DeepCopyObject().(client.Object), key); err != nil {
			t.Fatalf("label %T %s: %v", o, key, err)
		}
		got := o.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		if v := got.GetLabels()[shard.SlotLabel]; v != own {
			t.Errorf("%T %s: want slot %q, got %q", o, key, own, v)
		}
		if o.GetName() == "labelled" && writes[o.GetName()] != 0 {
			t.Errorf("%T %s: labelled already, want no write, got %d", o, key, writes[o.GetName()])
		}
	}
}
