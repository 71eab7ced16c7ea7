package release_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/drivers/all"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

func TestPinnedImage(t *testing.T) {
	if _, err := release.PinnedImage("ghcr.io/yolean/buckety-controller@" + digest); err != nil {
		t.Errorf("want a digest reference accepted, got %v", err)
	}
	for _, ref := range []string{"ghcr.io/yolean/buckety-controller:v1.2.3", "ghcr.io/yolean/buckety-controller", "ghcr.io/yolean/buckety-controller@sha256:abc"} {
		if _, err := release.PinnedImage(ref); err == nil || !strings.Contains(err.Error(), "want a reference pinned by digest") {
			t.Errorf("%s: want refused, got %v", ref, err)
		}
	}
}

func TestImageFromOCILayout(t *testing.T) {
	dir := t.TempDir()
	idx := `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"` + digest + `","size":1}]}`
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := release.ImageFromOCILayout(dir, release.ImageName)
	if err != nil || d.String() != release.ImageName+"@"+digest {
		t.Fatalf("want %s@%s, got %v %v", release.ImageName, digest, d, err)
	}
	if _, err := release.ImageFromOCILayout(t.TempDir(), release.ImageName); err == nil {
		t.Error("want an error for a directory without index.json")
	}
}

// TestRender: the release is self-contained (no reference outside itself),
// every image is pinned, and the same inputs give the same bytes.
func TestRender(t *testing.T) {
	base := filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base")
	ref, err := release.PinnedImage("ghcr.io/yolean/buckety-controller@" + digest)
	if err != nil {
		t.Fatal(err)
	}
	a, err := release.Render(base, ref)
	if err != nil {
		t.Fatal(err)
	}
	b, err := release.Render(base, ref)
	if err != nil {
		t.Fatal(err)
	}
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s: two renders differ", name)
		}
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(a[release.KustomizationFile], &k); err != nil {
		t.Fatal(err)
	}
	for _, r := range k.Resources {
		if _, ok := a[r]; !ok || strings.Contains(r, "/") {
			t.Errorf("kustomization resource %q is not a file of the release directory", r)
		}
	}
	all := string(a[release.ManifestsFile])
	if n := strings.Count(all, "image: ghcr.io/yolean/buckety-controller@"+digest); n != 2 {
		t.Errorf("want both Deployments on the pinned image, found %d", n)
	}
	if strings.Contains(all, "../") || strings.Contains(all, ":dev") {
		t.Error("the release refers back to the base or keeps the placeholder tag")
	}
	if !strings.Contains(string(a[release.CRDsFile]), "name: bucketies.buckety.yolean.se") {
		t.Error("want the CRDs in crds.yaml")
	}
	// The FlowSchema is cluster-scoped: kustomize puts the base's namespace
	// on it, the release does not.
	for _, doc := range strings.Split(all, "\n---\n") {
		if strings.Contains(doc, "kind: FlowSchema") && strings.Contains(doc, "\n  namespace: ") {
			t.Errorf("the FlowSchema carries a namespace:\n%s", doc)
		}
	}
	if !strings.Contains(all, "name: buckety-controller-leases") {
		t.Error("want the controller's FlowSchema in the release")
	}
}

// TestSchemasAreDeterministic: the published schemas render byte-identical
// twice (make verify compares them with the committed ones).
func TestSchemasAreDeterministic(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(controlplane.RepoRoot()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Chdir(wd); err != nil {
			t.Fatal(err)
		}
	}()
	a, err := release.Schemas(all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	b, err := release.Schemas(all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s: two renders differ", name)
		}
		onDisk, err := os.ReadFile(name)
		if err != nil || !bytes.Equal(onDisk, a[name]) {
			t.Errorf("%s: committed file differs from the generated one (run make generate): %v", name, err)
		}
	}
	for _, want := range []string{"drivers/kadm/schema/v0.9/parameters.schema.json", "drivers/s3/schema/v0.8/config.schema.json", release.ControllerSchemaPath} {
		if _, ok := a[want]; !ok {
			t.Errorf("want %s generated", want)
		}
	}
}

// TestParameterBoundsPublished: every driver's published parameters and
// access-parameters schemas carry the bounds the API enforces on
// spec.parameters, from v1alpha1's constants: at most MaxParameters keys
// of MaxParameterKeyLength characters, every string value at most
// MaxParameterValueLength.
func TestParameterBoundsPublished(t *testing.T) {
	t.Chdir(controlplane.RepoRoot()) // Schemas reads doc comments
	files, err := release.Schemas(all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	type bounded struct {
		MaxProperties *int `json:"maxProperties"`
		PropertyNames *struct {
			MaxLength *int `json:"maxLength"`
		} `json:"propertyNames"`
		Properties map[string]struct {
			Type      string `json:"type"`
			MaxLength *int   `json:"maxLength"`
		} `json:"properties"`
		PatternProperties map[string]struct {
			Type      string `json:"type"`
			MaxLength *int   `json:"maxLength"`
		} `json:"patternProperties"`
	}
	reg := all.Registry()
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		_, params, access := release.SchemaPaths(d)
		for _, path := range []string{params, access} {
			var s bounded
			if err := json.Unmarshal(files[path], &s); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if s.MaxProperties == nil || *s.MaxProperties != v1.MaxParameters {
				t.Errorf("%s: want maxProperties %d, got %v", path, v1.MaxParameters, s.MaxProperties)
			}
			if s.PropertyNames == nil || s.PropertyNames.MaxLength == nil || *s.PropertyNames.MaxLength != v1.MaxParameterKeyLength {
				t.Errorf("%s: want propertyNames.maxLength %d", path, v1.MaxParameterKeyLength)
			}
			values := 0
			for k, p := range s.Properties {
				if p.Type == "string" && (p.MaxLength == nil || *p.MaxLength > v1.MaxParameterValueLength) {
					t.Errorf("%s: property %s: want maxLength at most %d, got %v", path, k, v1.MaxParameterValueLength, p.MaxLength)
				}
				values++
			}
			for k, p := range s.PatternProperties {
				if p.Type == "string" && (p.MaxLength == nil || *p.MaxLength > v1.MaxParameterValueLength) {
					t.Errorf("%s: pattern %s: want maxLength at most %d, got %v", path, k, v1.MaxParameterValueLength, p.MaxLength)
				}
				values++
			}
			if path == params && values == 0 {
				t.Errorf("%s: no parameters at all", path)
			}
		}
	}
}
