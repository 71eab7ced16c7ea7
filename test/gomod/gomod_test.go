package gomod

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCertManagerCRDsOnEmptyModuleCache is the newcomer's machine: a module
// cache that holds nothing, where `go list -m -f {{.Dir}}` prints an empty
// line for cert-manager and make run failed with "no CustomResourceDefinition
// in deploy/crds". The lookup must download the module and find the CRDs.
func TestCertManagerCRDsOnEmptyModuleCache(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads a module from the proxy; run without -short (make test)")
	}
	cache := t.TempDir()
	t.Setenv("GOMODCACHE", cache)
	// The module cache is read-only by default; -modcacherw lets
	// t.TempDir remove it afterwards.
	t.Setenv("GOFLAGS", "-modcacherw")

	// The defect this replaces: on an empty cache, go list reports no
	// directory at all (or one that does not exist).
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", CertManager)
	cmd.Dir = root()
	out, err := cmd.Output()
	if err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			if _, serr := os.Stat(d); serr == nil {
				t.Fatalf("precondition: want go list -m to find no cert-manager directory in an empty module cache, got %s", d)
			}
		}
	}

	crds, err := CertManagerCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(crds, cache) {
		t.Errorf("want the CRDs from the empty cache %s (just downloaded), got %s", cache, crds)
	}
	yamls, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var certificate bool
	for _, y := range yamls {
		b, err := os.ReadFile(y)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "name: certificates.cert-manager.io") {
			certificate = true
		}
	}
	if !certificate {
		t.Errorf("want the Certificate CRD among %d manifests in %s, got none", len(yamls), crds)
	}
}

func TestDirUnknownModuleNamesIt(t *testing.T) {
	_, err := Dir("example.com/not/a/dependency")
	if err == nil || !strings.Contains(err.Error(), "example.com/not/a/dependency") {
		t.Fatalf("want an error naming the module, got %v", err)
	}
}
