package release_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TestExampleYAMLHasSchemaLine: every YAML file under examples/ names its
// schema for editors.
func TestExampleYAMLHasSchemaLine(t *testing.T) {
	root := filepath.Join(controlplane.RepoRoot(), "examples")
	n := 0
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		n++
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		line, err := bufio.NewReader(f).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "# yaml-language-server: $schema=https://") {
			t.Errorf("%s: want a first line '# yaml-language-server: $schema=https://...', got %q", p, line)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walk examples: %d files, %v", n, err)
	}
}

// TestInstallExample: the maintainer overlay builds, wires the generated
// ConfigMap into both Deployments and the credentials only into the
// controller, and its config is valid.
func TestInstallExample(t *testing.T) {
	dir := filepath.Join(controlplane.RepoRoot(), "examples", "install")
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var cm, creds string
	for _, r := range res.Resources() {
		switch {
		case r.GetKind() == "ConfigMap" && strings.HasPrefix(r.GetName(), "buckety-controller-config-"):
			cm = r.GetName()
		case r.GetKind() == "Secret" && strings.HasPrefix(r.GetName(), "buckety-controller-credentials-"):
			creds = r.GetName()
		}
	}
	if cm == "" || creds == "" {
		t.Fatalf("want the generated ConfigMap and Secret, got %q %q", cm, creds)
	}
	for _, r := range res.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		s := string(y)
		if !strings.Contains(s, "name: "+cm) {
			t.Errorf("%s: want the config ConfigMap %s mounted", r.GetName(), cm)
		}
		if has := strings.Contains(s, creds); has != (r.GetName() == "buckety-controller") {
			t.Errorf("%s: credentials Secret referenced=%v; only the controller may have it", r.GetName(), has)
		}
	}
	env := map[string]string{}
	b, err := os.ReadFile(filepath.Join(dir, "credentials.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	if _, err := config.Load(dir, config.Options{Registry: all.Registry(), Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}); err != nil {
		t.Fatalf("example config: %v", err)
	}
}
