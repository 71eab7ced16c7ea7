// Package logdir keeps what a failed test's directory holds for reading,
// its processes' logs, and removes the rest: etcd's data, the servers'
// data and sockets. A failing 100,000 run would otherwise leave gigabytes
// of etcd behind, on a machine whose next run starts right after.
package logdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Dir is the name of the directories whose files are kept.
const Dir = "logs"

// TempDir is a directory for one test's processes, data and logs (in
// directories named Dir): removed when t passes; when it fails, its logs
// are kept (KeepLogs) and named in t's log. what names the processes in
// that line. With BUCKETY_KEEP_LOGS set to a directory, the logs of a
// passing run are copied there first (a long benchmark's replicas' logs
// outlive its data).
func TempDir(t testing.TB, prefix, what string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			if kept, err := KeepLogs(dir); err != nil {
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

// KeepLogs removes from dir everything but the files in directories named
// logs, at any depth, and the directories that lead to them; it removes
// dir itself when no such file is left (a test that failed before any
// process started). kept reports whether a log is left to read. Links are
// removed, never followed. Call it once the processes writing there have
// stopped.
func KeepLogs(dir string) (kept bool, err error) {
	kept, err = prune(dir)
	if err != nil {
		return kept, err
	}
	if !kept {
		if err := os.RemoveAll(dir); err != nil {
			return false, err
		}
	}
	return kept, nil
}

// prune removes what dir holds but logs, and reports whether it holds any.
func prune(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	kept := false
	var errs []error
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && e.Name() == Dir:
			if files, err := os.ReadDir(path); err != nil {
				errs = append(errs, err)
			} else if len(files) > 0 {
				kept = true
				continue
			}
			errs = append(errs, os.RemoveAll(path))
		case e.IsDir():
			k, err := prune(path)
			if err != nil {
				errs = append(errs, err)
				kept = kept || k
				continue
			}
			if k {
				kept = true
				continue
			}
			errs = append(errs, os.RemoveAll(path))
		default:
			// Files, sockets and links alike (a link's target is not
			// touched).
			errs = append(errs, os.Remove(path))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return kept, fmt.Errorf("keep only the logs of %s: %w", dir, err)
	}
	return kept, nil
}

// copyLogs copies every file under a directory named Dir in from to the
// same relative path in to.
func copyLogs(from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Base(filepath.Dir(path)) != Dir {
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
