// Package release is the buckety-release binary: it writes the drivers'
// published JSON schemas and the generated tables of the documentation,
// and renders the digest-pinned kustomize release base.
package release

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/Yolean/buckety-controller/drivers/all"
	controlleroptions "github.com/Yolean/buckety-controller/internal/app/controller/options"
	webhookoptions "github.com/Yolean/buckety-controller/internal/app/webhook/options"
	"github.com/Yolean/buckety-controller/internal/release"
)

const usage = `usage:
  buckety-release schemas [--root DIR]                       write every driver's schemas and the buckety-controller.yaml schema
  buckety-release docs [--root DIR]                          rewrite the generated tables of README.md, docs/*.md and
                                                             drivers/*/README.md (between their GENERATED markers)
  buckety-release drivers [--config FILE | --ldflags next-patch|next-major]
                                                             list the registered drivers (name, version, package);
                                                             or the drivers a buckety-controller.yaml uses;
                                                             or -ldflags -X arguments stamping every driver's next version
  buckety-release secret-keys [--root DIR] DRIVER [OPTIONAL-KEY...]
                                                             the Secret keys DRIVER's published schema declares, sorted and
                                                             comma-separated: the required ones plus the optional ones named
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
	case "schemas", "docs":
		return generateCmd(fs, args[0], args[1:], stdout, stderr)
	case "drivers":
		return driversCmd(fs, args[1:], stdout, stderr)
	case "secret-keys":
		return secretKeysCmd(fs, args[1:], stdout, stderr)
	case "render":
		return renderCmd(fs, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "buckety-release: unknown command %q\n%s", args[0], usage)
	return 2
}

// generateCmd writes the files generated from the drivers and the
// binaries' flags: the schema files (cmd schemas) or the generated regions
// of the docs (cmd docs).
func generateCmd(fs *flag.FlagSet, cmd string, args []string, stdout, stderr io.Writer) int {
	root := fs.String("root", ".", "repository root (doc comments are read from the Go sources there)")
	if err := fs.Parse(args); err != nil {
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
	write := func() ([]string, error) { return release.WriteSchemas(".", all.Registry()) }
	if cmd == "docs" {
		write = func() ([]string, error) {
			regions, err := release.DocRegions(all.Registry())
			if err != nil {
				return nil, err
			}
			// The binaries' flags, from the FlagSets they parse with
			// (here: internal/release does not import the commands).
			regions = append(regions,
				release.DocRegion{File: "docs/operations.md", Name: "flags-controller", Body: release.FlagTable(controlleroptions.Reference())},
				release.DocRegion{File: "docs/operations.md", Name: "flags-webhook", Body: release.FlagTable(webhookoptions.Reference())})
			return release.UpdateDocs(".", regions)
		}
	}
	paths, err := write()
	if err != nil {
		fmt.Fprintf(stderr, "buckety-release: %s: %v\n", cmd, err)
		return 1
	}
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	return 0
}

// renderCmd renders the digest-pinned release base.
func renderCmd(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	image := fs.String("image", "", "image reference pinned by digest ("+release.ImageName+"@sha256:...)")
	ociDir := fs.String("oci-dir", "", "read the digest from this OCI layout (contain build --output) instead of --image")
	repo := fs.String("repository", release.ImageName, "repository for --oci-dir")
	base := fs.String("base", "deploy/kustomize/base", "kustomize base to render")
	out := fs.String("out", "deploy/kustomize/release", "output directory (replaced)")
	if err := fs.Parse(args); err != nil {
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

func driversCmd(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	configFile := fs.String("config", "", "print the drivers this buckety-controller.yaml uses, one a line")
	bump := fs.String("ldflags", "", "print -X arguments stamping every driver with this version: "+string(release.NextPatch)+" or "+string(release.NextMajor))
	if err := fs.Parse(args); err != nil {
		return 2
	}
	reg := all.Registry()
	switch {
	case *configFile != "" && *bump != "":
		fmt.Fprintln(stderr, "buckety-release: drivers takes --config or --ldflags, not both")
		return 2
	case *configFile != "":
		b, err := os.ReadFile(*configFile)
		if err == nil {
			var names []string
			if names, err = release.ConfigDrivers(reg, b); err == nil {
				fmt.Fprintln(stdout, strings.Join(names, "\n"))
				return 0
			}
		}
		fmt.Fprintf(stderr, "buckety-release: drivers: %s: %v\n", *configFile, err)
		return 1
	case *bump != "":
		flags, err := release.VersionLDFlags(reg, release.Bump(*bump))
		if err != nil {
			fmt.Fprintf(stderr, "buckety-release: drivers: --ldflags: %v\n", err)
			return 2
		}
		fmt.Fprintln(stdout, flags)
		return 0
	}
	for _, d := range release.Drivers(reg) {
		fmt.Fprintf(stdout, "%s %s %s\n", d.Name, d.Version, d.Package)
	}
	return 0
}

func secretKeysCmd(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	root := fs.String("root", ".", "repository root, where the published schemas are")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	d, ok := all.Registry().Get(fs.Arg(0))
	if !ok {
		fmt.Fprintf(stderr, "buckety-release: secret-keys: no driver %q (registered: %s)\n", fs.Arg(0), strings.Join(all.Registry().Names(), ", "))
		return 2
	}
	path := filepath.Join(*root, release.SecretSchemaPath(d))
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "buckety-release: secret-keys: %v\n", err)
		return 1
	}
	keys, err := release.SecretKeysFromSchema(b)
	if err != nil {
		fmt.Fprintf(stderr, "buckety-release: secret-keys: %s: %v\n", path, err)
		return 1
	}
	names, err := release.ExpectedSecretKeys(keys, fs.Args()[1:])
	if err != nil {
		fmt.Fprintf(stderr, "buckety-release: secret-keys: %s: %v\n", path, err)
		return 2
	}
	fmt.Fprintln(stdout, strings.Join(names, ","))
	return 0
}
