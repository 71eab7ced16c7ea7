package harness

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// What every environment of processes shares (the fault harness, the scale
// benchmark): a directory whose logs are kept when the test fails
// (logdir.TempDir), a control plane with buckety's CRDs, and the files the
// controller runs with. Each process an environment starts is stopped by
// StopAtCleanup.

// StopAtCleanup calls stop when t ends, and fails t when it fails.
func StopAtCleanup(t *testing.T, what string, stop func() error) {
	t.Helper()
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop %s: %v", what, err)
		}
	})
}

// ControlPlane starts a control plane with buckety's CRDs in dir/cp (with
// kube-controller-manager when withKCM: garbage collection, namespace
// deletion), stopped when t ends.
func ControlPlane(ctx context.Context, t *testing.T, dir string, withKCM bool) *controlplane.ControlPlane {
	t.Helper()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(dir, "cp"), ControllerManager: withKCM, CRDDirs: []string{controlplane.CRDDir()}})
	if err != nil {
		t.Fatal(err)
	}
	StopAtCleanup(t, "control plane", cp.Stop)
	return cp
}

// ControllerFiles installs the controller's RBAC and FlowSchema through k8s and writes what
// the controller binary runs with: dir/controller.kubeconfig, acting as its
// ServiceAccount, and dir/config holding buckety-controller.yaml.
func ControllerFiles(ctx context.Context, t *testing.T, cp *controlplane.ControlPlane, k8s client.Client, dir, configYAML string) (kubeconfig, configDir string) {
	t.Helper()
	if err := InstallRBAC(ctx, k8s, ControllerRoleFile(), SystemNamespace, ControllerServiceAccount); err != nil {
		t.Fatal(err)
	}
	if err := InstallFlowSchema(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(dir, "controller.kubeconfig")
	if err := ImpersonatingKubeconfig(cp, kubeconfig, SystemNamespace, ControllerServiceAccount); err != nil {
		t.Fatal(err)
	}
	configDir = filepath.Join(dir, "config")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configDir, config.Filename), []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, configDir
}
