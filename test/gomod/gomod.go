// Package gomod finds files inside this module's dependencies the way a
// fresh machine can: by downloading the module first.
//
// `go list -m -f {{.Dir}} MOD` prints nothing for a module that no package
// built so far imports, because the toolchain never downloaded it; a warm
// module cache hides that. cert-manager is such a module here: its CRDs are
// read from its module zip, but nothing `make run` builds imports it.
// `go mod download -json MOD` downloads it (at the version go.mod requires)
// and prints its directory, so Dir works on an empty module cache too.
package gomod

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// CertManager is the module whose deploy/crds the local stack and the
// release tests install, so the release's Issuer and Certificates apply.
const CertManager = "github.com/cert-manager/cert-manager"

// root is this module's directory: the go.mod that pins the versions.
func root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// download is one line of `go mod download -json`.
type download struct {
	Path, Version, Dir, Error string
}

// Dir returns the directory of module mod at the version this module's
// go.mod requires, downloading it into the module cache first when it is
// not there.
func Dir(mod string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = root()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var d download
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
		return "", fmt.Errorf("go mod download -json %s: %v (output %q, stderr %q)", mod, firstErr(runErr, err), stdout.String(), strings.TrimSpace(stderr.String()))
	}
	if d.Error != "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, d.Error)
	}
	if runErr != nil {
		return "", fmt.Errorf("go mod download %s: %v: %s", mod, runErr, strings.TrimSpace(stderr.String()))
	}
	if d.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s printed no directory", mod)
	}
	if _, err := os.Stat(d.Dir); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	return d.Dir, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// CertManagerCRDs returns the directory of cert-manager's CRD manifests,
// downloading the module first when needed.
func CertManagerCRDs() (string, error) {
	dir, err := Dir(CertManager)
	if err != nil {
		return "", err
	}
	crds := filepath.Join(dir, "deploy", "crds")
	matches, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil {
		return "", err
	}
	if len(matches) == 0 {
		return "", fmt.Errorf("%s holds no CRD manifests (*.yaml): has the %s module changed its layout?", crds, CertManager)
	}
	return crds, nil
}
