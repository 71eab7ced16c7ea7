// Command buckety-release renders the digest-pinned kustomize release base
// and the drivers' schema files.
package main

import (
	"os"

	"github.com/Yolean/buckety-controller/internal/app/release"
)

func main() {
	os.Exit(release.Main(os.Args[1:], os.Stdout, os.Stderr))
}
