package integration

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/test/harness"
)

// installTenantRoles installs the shipped buckety-edit and buckety-view
// ClusterRoles, which kube-controller-manager aggregates into edit and
// view.
func installTenantRoles(t *testing.T) {
	t.Helper()
	if err := harness.InstallTenantRoles(context.Background(), k8s); err != nil {
		t.Fatal(err)
	}
}

// asUser is a client that impersonates user.
func asUser(t *testing.T, user string) client.Client {
	t.Helper()
	c, err := harness.UserClient(cp, user)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bindRole binds the ClusterRole role to user in ns.
func bindRole(t *testing.T, ns, user, role string) {
	t.Helper()
	if err := harness.BindRole(context.Background(), k8s, ns, user, role); err != nil {
		t.Fatal(err)
	}
}

// tenant is a user bound to the built-in edit role (with buckety-edit
// aggregated into it) in ns, and nothing else (harness.Tenant).
func tenant(t *testing.T, ns, user string) client.Client {
	t.Helper()
	c, err := harness.Tenant(context.Background(), cp, k8s, ns, user)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
