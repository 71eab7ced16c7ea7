package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBuildCache: with the run's cache on, a second BuildWith of the same
// package and flags is the same file as the first (one go build, linked),
// other flags are another build, and every file handed out is executable; with it
// off, each BuildWith builds a file of its own. The package is the
// module's smallest command (test/cluster/pause).
func TestBuildCache(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build; run without -short (make test)")
	}
	const pkg = "github.com/Yolean/buckety-controller/test/cluster/pause"
	dir := t.TempDir()
	build := func(name string, o BuildOptions) string {
		t.Helper()
		out := filepath.Join(dir, name)
		if err := BuildWith(pkg, out, o); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&0o111 == 0 {
			t.Fatalf("%s: not executable (%v)", name, st.Mode())
		}
		return out
	}
	same := func(a, b string) bool {
		t.Helper()
		sa, err := os.Stat(a)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := os.Stat(b)
		if err != nil {
			t.Fatal(err)
		}
		return os.SameFile(sa, sb)
	}
	plain1 := build("plain-1", BuildOptions{})
	plain2 := build("plain-2", BuildOptions{})
	if same(plain1, plain2) {
		t.Fatal("without the cache, two builds are one file")
	}
	if err := cacheBuilds(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := endBuildCache(); err != nil { // a no-op once ended below
			t.Error(err)
		}
	}()
	a := build("cached-a", BuildOptions{})
	b := build("cached-b", BuildOptions{})
	stripped := build("cached-stripped", BuildOptions{LDFlags: "-s -w"})
	if !same(a, b) {
		t.Error("with the cache, the same package and flags were built twice")
	}
	if same(a, stripped) {
		t.Error("with the cache, other -ldflags were handed the first build")
	}
	builds.mu.Lock()
	cacheDir := builds.dir
	builds.mu.Unlock()
	if err := endBuildCache(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cacheDir); !os.IsNotExist(err) {
		t.Errorf("the cache's directory %s is left after its end (%v)", cacheDir, err)
	}
	if _, err := os.Stat(a); err != nil {
		t.Errorf("a binary handed out is gone with the cache: %v", err)
	}
}
