package controlplane

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/test/logdir"
)

// StartT starts a control plane for a test and stops it in t.Cleanup, even
// when the test fails. Integration tests call it; they fail (never skip)
// when the binaries are missing, except under -short, which is how the unit
// test run leaves them out.
func StartT(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the real control plane; run without -short (make test)")
	}
	if opts.Dir == "" {
		// t.TempDir paths can exceed the 108-byte unix socket limit etcd
		// and the apiserver use for some sockets; keep them short.
		opts.Dir = logdir.TempDir(t, "bkt-cp-", "control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	return cp
}

// RepoRoot returns the repository root, found from this file's location, so
// tests in any package can name deploy/ paths.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// CRDDir is the directory of the generated buckety CRDs.
func CRDDir() string { return filepath.Join(RepoRoot(), "deploy", "kustomize", "base", "crds") }
