package harness

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/logdir"
)

// What every environment of processes shares (the fault harness, the scale
// benchmark): a directory kept when the test fails, a control plane with
// buckety's CRDs, and the files the controller runs with. Each process an
// environment starts is stopped by StopAtCleanup.

// TempDir is a directory for one environment's processes, data and logs:
// removed when t passes, kept and named in the log when it fails. what
// names the environment in that line. With BUCKETY_KEEP_LOGS set to a
// directory, the processes' logs of a passing run are copied there first
// (a long benchmark's replicas' logs outlive its data).
func TempDir(t *testing.T, prefix, what string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			// The logs only: data (etcd's, the broker's) goes.
			if kept, err := logdir.KeepLogs(dir); err != nil {
				t.Errorf("keep %s's logs: %v", what, err)
			} else if kept {
				t.Logf("%s: logs kept in %s", what, dir)
			}
			return
		}
		if keep := os.Getenv("BUCKETY_KEEP_LOGS"); keep != "" {
			to := filepath.Join(keep, filepath.Base(dir))
			if err := copyLogs(dir, to); err != nil {
				t.Errorf("keep %s's logs: %v", what, err)
			} else {
				t.Logf("%s: logs copied to %s", what, to)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	return dir
}

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

// copyLogs copies every file under a directory named logs in from to the
// same relative path in to.
func copyLogs(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Base(filepath.Dir(path)) != "logs" {
			return nil
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return copyFile(path, dst)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", from, err)
	}
	return out.Close()
}
