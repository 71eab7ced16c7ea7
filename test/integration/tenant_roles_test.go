package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/controlplane"
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
	f, err := os.Open(filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base", "tenant-roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var cr rbacv1.ClusterRole
		if err := dec.Decode(&cr); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		createOrIgnore(t, &cr)
	}
	ns := namespace(t)
	for user, role := range map[string]string{"tenant-editor": "edit", "tenant-viewer": "view"} {
		create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}})
	}
	as := func(user string) client.Client {
		rc := rest.CopyConfig(cp.RESTConfig)
		rc.Impersonate = rest.ImpersonationConfig{UserName: user}
		scheme, err := appcontroller.Scheme()
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.New(rc, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	editor, viewer := as("tenant-editor"), as("tenant-viewer")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka"}}
	// Aggregation is asynchronous: wait until edit covers Bucketies.
	eventually(t, 60*time.Second, "edit aggregates buckety-edit", func() (bool, string) {
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
	eventually(t, 60*time.Second, "view aggregates buckety-view", func() (bool, string) {
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
