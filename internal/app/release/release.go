// Package release is the buckety-release binary: it renders the
// digest-pinned kustomize release base and the drivers' schema files.
package release

import (
	"flag"
	"fmt"
	"io"
)

// Main parses flags and says what the release tool will do. Rendering is not
// in this build yet; it exits non-zero rather than pretend to have written
// anything.
func Main(args []string, _, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: buckety-release render --image REF@sha256:DIGEST --out DIR | buckety-release schemas")
		return 2
	}
	fs := flag.NewFlagSet("buckety-release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "render":
		image := fs.String("image", "", "image reference pinned by digest")
		out := fs.String("out", "deploy/kustomize/release", "output directory")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		fmt.Fprintf(stderr, "buckety-release: would render deploy/kustomize/base with image %q into %s; rendering is not in this build yet\n", *image, *out)
	case "schemas":
		fmt.Fprintln(stderr, "buckety-release: would write drivers/<driver>/schema/v<major.minor>/*.schema.json; schema writing is not in this build yet")
	default:
		fmt.Fprintf(stderr, "buckety-release: unknown command %q (want render or schemas)\n", args[0])
		return 2
	}
	return 3
}
