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

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/release"
)

const usage = `usage:
  buckety-release schemas [--root DIR]                       write every driver's schemas and the buckety-controller.yaml schema
  buckety-release render (--image REF@sha256:DIGEST | --oci-dir DIR) [--base DIR] [--out DIR]
                                                             render the digest-pinned, self-contained release base
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
		image := fs.String("image", "", "image reference pinned by digest ("+release.ImageName+"@sha256:...)")
		ociDir := fs.String("oci-dir", "", "read the digest from this OCI layout (contain build --output) instead of --image")
		repo := fs.String("repository", release.ImageName, "repository for --oci-dir")
		base := fs.String("base", "deploy/kustomize/base", "kustomize base to render")
		out := fs.String("out", "deploy/kustomize/release", "output directory (replaced)")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		var ref name.Digest
		var err error
		switch {
		case *image != "" && *ociDir != "":
			fmt.Fprintln(stderr, "buckety-release: give --image or --oci-dir, not both")
			return 2
		case *ociDir != "":
			ref, err = release.ImageFromOCILayout(*ociDir, *repo)
		case *image != "":
			ref, err = release.PinnedImage(*image)
		default:
			fmt.Fprintln(stderr, "buckety-release: render needs --image REF@sha256:DIGEST or --oci-dir DIR")
			return 2
		}
		if err != nil {
			fmt.Fprintf(stderr, "buckety-release: %v\n", err)
			return 2
		}
		files, err := release.Render(*base, ref)
		if err == nil {
			err = release.WriteRelease(*out, files)
		}
		if err != nil {
			fmt.Fprintf(stderr, "buckety-release: render: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "rendered %s with %s\n", *out, ref)
		return 0
	}
	fmt.Fprintf(stderr, "buckety-release: unknown command %q\n%s", args[0], usage)
	return 2
}
