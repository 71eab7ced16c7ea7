package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestTenantRolesAggregate (issue 14.4): with the shipped buckety-edit and
// buckety-view ClusterRoles installed, kube-controller-manager's
// clusterrole-aggregation controller folds them into the built-in edit and
// view roles. A user bound to edit in a namespace creates and deletes a
// Buckety and a BucketyAccess there, but is forbidden to write their
// status; a user bound to view reads them and cannot create one.
func TestTenantRolesAggregate(t *testing.T) {
	needInfra(t)
	ctx := context.Background()
	installTenantRoles(t)
	ns := namespace(t)
	bindRole(t, ns, "tenant-editor", "edit")
	bindRole(t, ns, "tenant-viewer", "view")
	as := func(user string) client.Client { return asUser(t, user) }
	editor, viewer := as("tenant-editor"), as("tenant-viewer")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka"}}
	// Aggregation is asynchronous: wait until edit covers Bucketies.
	wait.For(t, waitTimeout, "edit aggregates buckety-edit", func() (bool, string) {
		err := editor.Create(ctx, b.DeepCopy(), client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})
	if err := editor.Create(ctx, b); err != nil {
		t.Fatalf("edit: want to create a Buckety, got %v", err)
	}
	acc := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "reader"}}
	if err := editor.Create(ctx, acc); err != nil {
		t.Fatalf("edit: want to create a BucketyAccess, got %v", err)
	}
	if err := editor.Patch(ctx, b, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"parameters":{"partitions":"2"}}}`))); err != nil {
		t.Errorf("edit: want to patch a Buckety's spec, got %v", err)
	}
	for _, obj := range []client.Object{b, acc} {
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"status":{"backendResourceName":"someone-elses"}}`))
		if _, ok := obj.(*v1.BucketyAccess); ok {
			patch = client.RawPatch("application/merge-patch+json", []byte(`{"status":{"observedGeneration":9}}`))
		}
		err := editor.Status().Patch(ctx, obj, patch)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "/status") {
			t.Errorf("edit: want patching %T status forbidden, got %v", obj, err)
		}
	}
	var list v1.BucketyList
	wait.For(t, waitTimeout, "view aggregates buckety-view", func() (bool, string) {
		err := viewer.List(ctx, &list, client.InNamespace(ns))
		return err == nil && len(list.Items) == 1, fmt.Sprint(err, len(list.Items))
	})
	if err := viewer.Get(ctx, client.ObjectKeyFromObject(acc), &v1.BucketyAccess{}); err != nil {
		t.Errorf("view: want to read a BucketyAccess, got %v", err)
	}
	if err := viewer.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "nope", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka"}}); !apierrors.IsForbidden(err) {
		t.Errorf("view: want create forbidden, got %v", err)
	}
	for _, obj := range []client.Object{acc, b} {
		if err := editor.Delete(ctx, obj); err != nil {
			t.Errorf("edit: want to delete %s, got %v", obj.GetName(), err)
		}
	}
}
