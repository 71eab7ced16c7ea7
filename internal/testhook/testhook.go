// Package testhook lets a test stop the controller between two writes, to
// kill the real process there and prove that what it wrote first is enough
// to recover. It is inert unless BUCKETY_TEST_PAUSE_DIR is set in the
// controller's environment, which only tests do.
package testhook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// Env names the directory where pause points are signalled.
const Env = "BUCKETY_TEST_PAUSE_DIR"

// Points where the controller can be paused.
const (
	// AfterCreate: the driver created the backend resource; nothing about
	// it has been written to the API server since.
	AfterCreate = "after-create"
	// AfterInspect: the adoption check found no resource; the create has
	// not been attempted.
	AfterInspect = "after-inspect"
)

// Pause, when the pause directory holds a file named point+".arm", creates
// point+".reached" and blocks until point+".release" exists or ctx ends.
// Without the environment variable it returns at once.
func Pause(ctx context.Context, point string) {
	dir := os.Getenv(Env)
	if dir == "" {
		return
	}
	if _, err := os.Stat(filepath.Join(dir, point+".arm")); err != nil {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, point+".reached"), nil, 0o644); err != nil {
		return
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, point+".release")); err == nil || !errors.Is(err, os.ErrNotExist) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
