package harness

import (
	"fmt"
	"os/exec"
)

// Import paths of the binaries.
const (
	ControllerPackage = "github.com/Yolean/buckety-controller/cmd/buckety-controller"
	WebhookPackage    = "github.com/Yolean/buckety-controller/cmd/buckety-webhook"
)

// Build builds the Go command pkg of this module to out, with ldflags when
// not empty: always from the tree under test, so a harness measures the
// code it ships with.
func Build(pkg, out, ldflags string) error {
	args := []string{"build", "-o", out}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	if b, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return nil
}
