package logdir

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree lists the files and directories under dir, relative to it.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// A failed scale run's directory keeps the control plane's and each
// replica's logs, and loses etcd's data, the pids, an empty logs directory
// and a link (whose target outside is untouched).
func TestKeepLogsKeepsOnlyTheLogs(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	write(t, outside)
	for _, f := range []string{
		"cp/logs/kube-apiserver.log", "cp/etcd/member/snap/db", "cp/kubeconfig", "cp/pki/ca.crt",
		"replica-0/logs/buckety-controller.log", "replica-0/config.yaml",
		"kafka/data/0.log", "pids/etcd",
	} {
		write(t, filepath.Join(dir, f))
	}
	if err := os.MkdirAll(filepath.Join(dir, "webhook", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "replica-0", "link")); err != nil {
		t.Fatal(err)
	}
	kept, err := KeepLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !kept {
		t.Errorf("want kept true: two logs are left")
	}
	got := strings.Join(tree(t, dir), " ")
	want := "cp cp/logs cp/logs/kube-apiserver.log replica-0 replica-0/logs replica-0/logs/buckety-controller.log"
	if got != want {
		t.Errorf("after KeepLogs:\n got %s\nwant %s", got, want)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the link's target outside: %v", err)
	}
}

// A test that failed before any process wrote a log (a binary missing)
// leaves nothing behind.
func TestKeepLogsRemovesADirectoryWithoutLogs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bkt-cp-1")
	write(t, filepath.Join(dir, "etcd", "db"))
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	kept, err := KeepLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if kept {
		t.Errorf("want kept false: no log was written")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("want %s removed, stat says %v", dir, err)
	}
}

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
		kept := filepath.Base(filepath.Dir(p)) == Dir
		switch {
		case kept && (err != nil || string(got) != body):
			t.Errorf("%s: want %q kept, got %q, %v", p, body, got, err)
		case !kept && !os.IsNotExist(err):
			t.Errorf("%s: want it not copied, got %q, %v", p, got, err)
		}
	}
}
