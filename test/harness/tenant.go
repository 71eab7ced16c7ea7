package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TenantRolesFile holds the shipped buckety-edit and buckety-view
// ClusterRoles, which aggregate into the built-in edit and view.
func TenantRolesFile() string {
	return filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base", "tenant-roles.yaml")
}

// InstallTenantRoles installs the shipped tenant ClusterRoles (existing
// ones are left as they are).
func InstallTenantRoles(ctx context.Context, c client.Client) error {
	f, err := os.Open(TenantRolesFile())
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var cr rbacv1.ClusterRole
		if err := dec.Decode(&cr); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		if err := CreateOrIgnore(ctx, c, &cr); err != nil {
			return err
		}
	}
}

// BindRole binds the ClusterRole role to user in ns.
func BindRole(ctx context.Context, c client.Client, ns, user, role string) error {
	return CreateOrIgnore(ctx, c, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}})
}

// UserClient is a client of the control plane that impersonates user.
func UserClient(cp *controlplane.ControlPlane, user string) (client.Client, error) {
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	scheme, err := appcontroller.Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(rc, client.Options{Scheme: scheme})
}

// Tenant returns the client of user, bound to the built-in edit role (with
// buckety-edit aggregated into it) in ns and nothing else: what a platform
// gives a team. It waits until edit covers Bucketies (aggregation is
// asynchronous).
func Tenant(ctx context.Context, cp *controlplane.ControlPlane, admin client.Client, ns, user string) (client.Client, error) {
	if err := InstallTenantRoles(ctx, admin); err != nil {
		return nil, err
	}
	if err := BindRole(ctx, admin, ns, user, "edit"); err != nil {
		return nil, err
	}
	c, err := UserClient(cp, user)
	if err != nil {
		return nil, err
	}
	probe := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka"}}
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("edit does not cover Bucketies for %s in %s after a minute: %w", user, ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
