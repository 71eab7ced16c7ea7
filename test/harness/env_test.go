package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCopyLogsKeepsOnlyLogs: BUCKETY_KEEP_LOGS keeps every process's log,
// at its path under the environment, and none of its data.
func TestCopyLogsKeepsOnlyLogs(t *testing.T) {
	from, to := t.TempDir(), filepath.Join(t.TempDir(), "kept")
	files := map[string]string{
		"logs/kube-apiserver.log":               "apiserver",
		"replica-1/logs/buckety-controller.log": "replica one",
		"cp/etcd/member/snap/db":                "data",
		"replica-1/pids/buckety-controller.pid": "42",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(from, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(from, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyLogs(from, to); err != nil {
		t.Fatal(err)
	}
	for p, body := range files {
		got, err := os.ReadFile(filepath.Join(to, p))
		kept := filepath.Base(filepath.Dir(p)) == "logs"
		switch {
		case kept && (err != nil || string(got) != body):
			t.Errorf("%s: want %q kept, got %q, %v", p, body, got, err)
		case !kept && !os.IsNotExist(err):
			t.Errorf("%s: want it not copied, got %q, %v", p, got, err)
		}
	}
}
