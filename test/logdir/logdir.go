// Package logdir keeps what a failed test's directory holds for reading,
// its processes' logs, and removes the rest: etcd's data, the servers'
// data and sockets. A failing 100,000 run would otherwise leave gigabytes
// of etcd behind, on a machine whose next run starts right after.
package logdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dir is the name of the directories whose files are kept.
const Dir = "logs"

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
