//go:build buckety_testhooks

package testhook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// Enabled reports whether the hook is compiled in: true in this build.
const Enabled = true

// Pause, when the directory named by Env holds a file named point+".arm",
// creates point+".reached" and blocks until point+".release" exists or ctx
// ends. Without the environment variable it returns at once.
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
