package testhook_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/Yolean/buckety-controller/internal/testhook"
)

// controllerPackage is the release binary's package.
const controllerPackage = "github.com/Yolean/buckety-controller/cmd/buckety-controller"

// buildRelease builds the controller as the release does (Makefile
// GOBUILD, hack/image.sh), plus the given extra go build arguments. GOFLAGS
// is cleared so a tag set in the environment cannot leak into the build
// that stands for the release.
func buildRelease(t *testing.T, extra ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "buckety-controller")
	args := append([]string{"build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -X github.com/Yolean/buckety-controller/internal/version.Version=release-test"}, extra...)
	cmd := exec.Command("go", append(args, "-o", out, controllerPackage)...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", cmd.Args[1:], err, b)
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestReleaseBinaryHasNoHook builds the controller exactly as a release is
// built and checks that the pause hook is not in it: neither its
// environment variable nor any function of this package (function names
// stay in a stripped Go binary, for tracebacks). The same build with the
// tag must contain both, so the check can fail.
func TestReleaseBinaryHasNoHook(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the controller binary twice; make test-integration runs it")
	}
	marks := []string{testhook.Env, "buckety-controller/internal/testhook."}
	release := buildRelease(t)
	for _, m := range marks {
		if bytes.Contains(release, []byte(m)) {
			t.Errorf("release build: want no %q in the binary, found it", m)
		}
	}
	hooked := buildRelease(t, "-tags", testhook.Tag)
	for _, m := range marks {
		if !bytes.Contains(hooked, []byte(m)) {
			t.Errorf("build with -tags %s: want %q in the binary, not found (this test could not see the hook)", testhook.Tag, m)
		}
	}
}
