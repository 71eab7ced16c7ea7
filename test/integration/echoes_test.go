package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestStatusEditedOutOfBandIsRestored: the controllers drop the watch
// events of their own status writes (status.Written), never someone
// else's. A status forged by whoever may write it (a cluster admin, a
// tenant given the status subresource) is a change like any other: the
// Buckety and its access are reconciled at once and their status restored,
// long before the hour's re-check.
func TestStatusEditedOutOfBandIsRestored(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ctx := context.Background()
	ns := namespace(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.orders", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "orders-topic"}}}
	create(t, b)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	conditions := func(o client.Object) *[]metav1.Condition {
		if b, ok := o.(*v1.Buckety); ok {
			return &b.Status.Conditions
		}
		return &o.(*v1.BucketyAccess).Status.Conditions
	}
	for round := range 2 { // twice: the second right after the controller's own restoring write
		for _, o := range []client.Object{b, a} {
			before := o.DeepCopyObject().(client.Object)
			meta.SetStatusCondition(conditions(o), metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Forged", Message: "written out of band", ObservedGeneration: o.GetGeneration()})
			if err := k8s.Status().Patch(ctx, o, client.MergeFrom(before)); err != nil {
				t.Fatal(err)
			}
			t.Logf("round %d: %T status forged", round, o)
			waitCondition(t, o, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonReconciled, waitTimeout)
		}
	}
}
