package harness

import (
	"fmt"
	"os/exec"
	"strings"
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

// BuildWith is Build with build tags as well.
func BuildWith(pkg, out string, o BuildOptions) error {
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
