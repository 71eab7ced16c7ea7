// Package release is the buckety-release binary: it writes the drivers'
// published JSON schemas and renders the digest-pinned kustomize release
// base.
package release

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/release"
)

const usage = `usage:
  buckety-release schemas [--root DIR]                       write every driver's schemas and the buckety-controller.yaml schema
  buckety-release render --image REF@sha256:DIGEST --out DIR  render the release base (not in this build yet)
`

// Main runs the command with args (without the program name) and returns
// the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("buckety-release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "schemas":
		root := fs.String("root", ".", "repository root (doc comments are read from the Go sources there)")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		if _, err := os.Stat(filepath.Join(*root, "go.mod")); err != nil {
			fmt.Fprintf(stderr, "buckety-release: --root %s is not the repository root (no go.mod)\n", *root)
			return 2
		}
		if err := os.Chdir(*root); err != nil {
			fmt.Fprintf(stderr, "buckety-release: %v\n", err)
			return 1
		}
		paths, err := release.WriteSchemas(".", all.Registry())
		if err != nil {
			fmt.Fprintf(stderr, "buckety-release: schemas: %v\n", err)
			return 1
		}
		for _, p := range paths {
			fmt.Fprintf(stdout, "wrote %s\n", p)
		}
		return 0
	case "render":
		image := fs.String("image", "", "image reference pinned by digest")
		out := fs.String("out", "deploy/kustomize/release", "output directory")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		fmt.Fprintf(stderr, "buckety-release: would render deploy/kustomize/base with image %q into %s; rendering is not in this build yet\n", *image, *out)
		return 3
	}
	fmt.Fprintf(stderr, "buckety-release: unknown command %q\n%s", args[0], usage)
	return 2
}
