// Package backendstest opens backends for tests as the controller opens
// its own: from a buckety-controller.yaml, with every driver registered.
package backendstest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
)

// Open loads yaml as buckety-controller.yaml (no environment variables
// are set for it) and opens its backends, closed when the test ends.
func Open(t testing.TB, yaml string) *backends.Set {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(dir, config.Options{Registry: all.Registry(), Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	set, err := backends.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set.Close(); err != nil {
			t.Error(err)
		}
	})
	return set
}
