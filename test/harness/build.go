package harness

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Import paths of the binaries.
const (
	ControllerPackage = "github.com/Yolean/buckety-controller/cmd/buckety-controller"
	WebhookPackage    = "github.com/Yolean/buckety-controller/cmd/buckety-webhook"
)

// BuildOptions are the go build flags of BuildWith.
type BuildOptions struct {
	// LDFlags is passed as -ldflags when not empty.
	LDFlags string
	// Tags are passed as -tags when not empty: testhook.Tag compiles the
	// test hooks in, for a test that pauses the binary (never a release).
	Tags []string
}

// Build builds the Go command pkg of this module to out, with ldflags when
// not empty: always from the tree under test, so a harness measures the
// code it ships with.
func Build(pkg, out, ldflags string) error {
	return BuildWith(pkg, out, BuildOptions{LDFlags: ldflags})
}

// builds is the run's cache of built binaries (RunCachingBuilds): go
// build compiles from its cache but links every time, about 5 CPU-seconds
// for the controller, and test/integration asked for the same
// webhook eight times and the same controller up to three.
var builds struct {
	mu      sync.Mutex
	dir     string // "": no cache, every BuildWith builds
	entries map[string]*builtBinary
}

type builtBinary struct {
	once sync.Once
	path string
	err  error
}

// RunCachingBuilds runs a package's tests (TestMain's m.Run) with every
// BuildWith of one package, flags and tags built once for the run and
// handed out as a link to that file (a copy across file systems), and
// removes those files after the run.
func RunCachingBuilds(m *testing.M) int {
	if err := cacheBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 1
	}
	code := m.Run()
	if err := endBuildCache(); err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// cacheBuilds starts the cache of RunCachingBuilds in a new directory.
func cacheBuilds() error {
	dir, err := os.MkdirTemp("", "buckety-builds-")
	if err != nil {
		return err
	}
	builds.mu.Lock()
	builds.dir, builds.entries = dir, map[string]*builtBinary{}
	builds.mu.Unlock()
	return nil
}

// endBuildCache ends the cache, if one is on, and removes what it built
// (the links handed out stay).
func endBuildCache() error {
	builds.mu.Lock()
	dir := builds.dir
	builds.dir, builds.entries = "", nil
	builds.mu.Unlock()
	if dir == "" {
		return nil
	}
	return os.RemoveAll(dir)
}

// BuildWith is Build with build tags as well.
func BuildWith(pkg, out string, o BuildOptions) error {
	builds.mu.Lock()
	dir := builds.dir
	var e *builtBinary
	if dir != "" {
		key := strings.Join([]string{pkg, o.LDFlags, strings.Join(o.Tags, ",")}, "\x00")
		if e = builds.entries[key]; e == nil {
			e = &builtBinary{path: filepath.Join(dir, fmt.Sprintf("%s-%d", filepath.Base(pkg), len(builds.entries)))}
			builds.entries[key] = e
		}
	}
	builds.mu.Unlock()
	if e == nil {
		return goBuild(pkg, out, o)
	}
	e.once.Do(func() { e.err = goBuild(pkg, e.path, o) })
	if e.err != nil {
		return e.err
	}
	return linkOrCopy(e.path, out)
}

func goBuild(pkg, out string, o BuildOptions) error {
	args := []string{"build", "-o", out}
	if o.LDFlags != "" {
		args = append(args, "-ldflags", o.LDFlags)
	}
	if len(o.Tags) > 0 {
		args = append(args, "-tags", strings.Join(o.Tags, ","))
	}
	if b, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// linkOrCopy makes out the file src: a hard link, or a copy (executable)
// where the two are on different file systems.
func linkOrCopy(src, out string) error {
	if err := os.Link(src, out); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return fmt.Errorf("copy %s to %s: %w", src, out, err)
	}
	return f.Close()
}
