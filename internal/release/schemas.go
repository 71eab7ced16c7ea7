// Package release holds what buckety-release does: writing the published
// JSON schemas and rendering the digest-pinned kustomize release base.
package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	orderedmap "github.com/pb33f/ordered-map/v2"
	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/config"
)

// Module is the product's Go module path.
const Module = "github.com/Yolean/buckety-controller"

// RawBase is where the schemas are published: GitHub raw URLs of the main
// branch. A consumer that wants a strict pin replaces "main" with a tag.
const RawBase = "https://raw.githubusercontent.com/Yolean/buckety-controller/main/"

// ControllerSchemaPath is the schema of the whole buckety-controller.yaml.
const ControllerSchemaPath = "deploy/schema/buckety-controller.schema.json"

// SchemaPaths returns the repository-relative paths of a driver's schemas:
// drivers/<name>/schema/v<major>.<minor>/{config,parameters,access-parameters}.schema.json.
func SchemaPaths(d drivers.Driver) (configPath, paramsPath, accessPath string) {
	dir := filepath.ToSlash(filepath.Join("drivers", d.Name(), "schema", d.Version().SchemaDir()))
	return dir + "/config.schema.json", dir + "/parameters.schema.json", dir + "/access-parameters.schema.json"
}

// SecretSchemaPath returns the repository-relative path of a driver's
// secret schema, beside its other schemas: the keys of the Secret its
// Grant writes.
func SecretSchemaPath(d drivers.Driver) string {
	return filepath.ToSlash(filepath.Join("drivers", d.Name(), "schema", d.Version().SchemaDir(), "secret.schema.json"))
}

// secretSchema publishes a driver's SecretKeys and the keys of its secret
// formats: one string property per key, the keys every Secret has as
// required, no others allowed. A format's key names the formats that add
// it in x-buckety-formats; the formats themselves, with their
// descriptions, are listed in the schema's own x-buckety-formats.
func secretSchema(d drivers.Driver) *jsonschema.Schema {
	props := jsonschema.NewProperties()
	var required []string
	var patterns map[string]*jsonschema.Schema
	for _, k := range drivers.AllSecretKeys(d) {
		p := &jsonschema.Schema{Type: "string", Description: k.Description}
		if len(k.Formats) > 0 {
			p.Extras = map[string]any{"x-buckety-formats": k.Formats}
		}
		if k.PerResource {
			if patterns == nil {
				patterns = map[string]*jsonschema.Schema{}
			}
			patterns[perResourcePattern(k.Name)] = p
			continue
		}
		props.Set(k.Name, p)
		if !k.Optional {
			required = append(required, k.Name)
		}
	}
	desc := "The keys of the Secret a BucketyAccess gets, with their values decoded (the Secret's stringData view). Required keys are in every Secret; the others only as their description says, and the keys of a secret format (x-buckety-formats) only when the access lists the format in spec.secretFormats. A Secret has no other keys."
	if patterns != nil {
		desc += " The keys of patternProperties are in the Secret of an access naming several Bucketies (spec.bucketyRefs), one per Buckety: the part after the dot is the Buckety's name, or <namespace>_<name> for another namespace's."
	}
	s := &jsonschema.Schema{
		Type:                 "object",
		Title:                d.Name() + " driver: BucketyAccess Secret keys",
		Description:          desc,
		Properties:           props,
		PatternProperties:    patterns,
		Required:             required,
		AdditionalProperties: jsonschema.FalseSchema,
	}
	var formats []map[string]string
	for _, f := range drivers.Formats(d) {
		m := map[string]string{"name": f.Name, "description": f.Description}
		if f.Several != "" {
			m["several"] = f.Several
		}
		if f.OneResource {
			m["several"] = "Not for an access naming several Bucketies: " + f.Several
		}
		formats = append(formats, m)
	}
	if len(formats) > 0 {
		s.Extras = map[string]any{"x-buckety-formats": formats}
	}
	return s
}

// perResourcePattern is the patternProperties key of a PerResource secret
// key: its name, a dot, and a Secret data key.
func perResourcePattern(name string) string {
	return "^" + regexp.QuoteMeta(name) + `\.[-._a-zA-Z0-9]+$`
}

// SecretKeysFromSchema reads the declaration back from a published secret
// schema, in the declared order; the per-resource keys (patternProperties)
// come last, sorted.
func SecretKeysFromSchema(b []byte) ([]drivers.SecretKey, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	// jsonschema.Schema does not read extensions back: the formats that
	// add each key are read on their own.
	var formats struct {
		Properties map[string]struct {
			Formats []string `json:"x-buckety-formats"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &formats); err != nil {
		return nil, err
	}
	if s.Properties == nil {
		return nil, fmt.Errorf("secret schema has no properties")
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var out []drivers.SecretKey
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		out = append(out, drivers.SecretKey{Name: p.Key, Description: p.Value.Description, Optional: !required[p.Key], Formats: formats.Properties[p.Key].Formats})
		delete(required, p.Key)
	}
	if len(required) > 0 {
		return nil, fmt.Errorf("secret schema requires keys it does not describe: %v", sortedKeys(required))
	}
	var perResource []drivers.SecretKey
	for pattern, p := range s.PatternProperties {
		name, ok := strings.CutSuffix(strings.TrimPrefix(pattern, "^"), `\.[-._a-zA-Z0-9]+$`)
		if !ok || perResourcePattern(regexpUnquote(name)) != pattern {
			return nil, fmt.Errorf("secret schema: patternProperties key %q is not a per-resource key's", pattern)
		}
		perResource = append(perResource, drivers.SecretKey{Name: regexpUnquote(name), Description: p.Description, Optional: true, PerResource: true})
	}
	slices.SortFunc(perResource, func(a, b drivers.SecretKey) int { return strings.Compare(a.Name, b.Name) })
	return append(out, perResource...), nil
}

// regexpUnquote undoes regexp.QuoteMeta on a key name, whose only
// metacharacter is the dot.
func regexpUnquote(s string) string { return strings.ReplaceAll(s, `\.`, ".") }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Schemas renders every schema file, keyed by repository-relative path. It
// reads Go doc comments for descriptions, so it runs with the working
// directory at the repository root.
func Schemas(reg *drivers.Registry) (map[string][]byte, error) {
	out := map[string][]byte{}
	var branches []*jsonschema.Schema
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		cfgPath, paramsPath, accessPath := SchemaPaths(d)
		cs, err := configSchema(d)
		if err != nil {
			return nil, err
		}
		cs.ID = jsonschema.ID(RawBase + cfgPath)
		cs.Title = fmt.Sprintf("%s driver %s: backend config", name, d.Version().SchemaDir())
		s := d.Schemas()
		boundParameters(s.Parameters)
		boundParameters(s.AccessParameters)
		for path, sch := range map[string]*jsonschema.Schema{cfgPath: cs, paramsPath: s.Parameters, accessPath: s.AccessParameters, SecretSchemaPath(d): secretSchema(d)} {
			sch.Version = jsonschema.Version
			sch.ID = jsonschema.ID(RawBase + path)
			b, err := marshal(sch)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			out[path] = b
		}
		props := jsonschema.NewProperties()
		props.Set("config", &jsonschema.Schema{Ref: RawBase + cfgPath})
		branches = append(branches, &jsonschema.Schema{
			If:   &jsonschema.Schema{Properties: constProps("driver", name), Required: []string{"driver"}},
			Then: &jsonschema.Schema{Properties: props},
		})
	}
	whole, err := controllerSchema(reg.Names(), branches)
	if err != nil {
		return nil, err
	}
	out[ControllerSchemaPath] = whole
	for _, k := range []struct{ crd, path string }{
		{"deploy/kustomize/base/crds/buckety.yolean.se_bucketies.yaml", BucketySchemaPath},
		{"deploy/kustomize/base/crds/buckety.yolean.se_bucketyaccesses.yaml", BucketyAccessSchemaPath},
	} {
		b, err := kindSchema(k.crd, k.path)
		if err != nil {
			return nil, err
		}
		out[k.path] = b
	}
	return out, nil
}

// boundParameters writes into a parameters schema the bounds the API
// server, the webhook and the controller enforce on every spec.parameters
// (v1alpha1.MaxParameters keys of at most MaxParameterKeyLength characters,
// values of at most MaxParameterValueLength), from the same constants, so
// an editor shows them before kubectl apply does. A bound a driver set
// itself is kept.
func boundParameters(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.MaxProperties == nil {
		s.MaxProperties = ptr(uint64(v1.MaxParameters))
	}
	if s.PropertyNames == nil {
		s.PropertyNames = &jsonschema.Schema{MaxLength: ptr(uint64(v1.MaxParameterKeyLength))}
	}
	value := func(v *jsonschema.Schema) {
		if v != nil && v.Type == "string" && v.MaxLength == nil {
			v.MaxLength = ptr(uint64(v1.MaxParameterValueLength))
		}
	}
	if s.Properties != nil {
		for pair := s.Properties.Oldest(); pair != nil; pair = pair.Next() {
			value(pair.Value)
		}
	}
	for _, v := range s.PatternProperties {
		value(v)
	}
}

func ptr[T any](v T) *T { return &v }

// Schemas of the two kinds, for `# yaml-language-server: $schema=` lines on
// Buckety and BucketyAccess YAML.
const (
	BucketySchemaPath       = "deploy/schema/buckety-v1alpha1.schema.json"
	BucketyAccessSchemaPath = "deploy/schema/bucketyaccess-v1alpha1.schema.json"
)

// kindSchema turns a generated CRD's openAPIV3Schema into a JSON schema an
// editor validates a manifest with.
func kindSchema(crdPath, path string) ([]byte, error) {
	b, err := os.ReadFile(crdPath)
	if err != nil {
		return nil, fmt.Errorf("read %s (run from the repository root, after controller-gen): %w", crdPath, err)
	}
	var crd struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", crdPath, err)
	}
	if len(crd.Spec.Versions) != 1 {
		return nil, fmt.Errorf("%s: want one version", crdPath)
	}
	v := crd.Spec.Versions[0]
	s := v.Schema.OpenAPIV3Schema
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		return nil, fmt.Errorf("%s: no properties", crdPath)
	}
	props["apiVersion"] = map[string]any{"const": crd.Spec.Group + "/" + v.Name}
	props["kind"] = map[string]any{"const": crd.Spec.Names.Kind}
	s["required"] = []string{"apiVersion", "kind", "spec"}
	s["$schema"] = jsonschema.Version
	s["$id"] = RawBase + path
	s["title"] = crd.Spec.Names.Kind + " " + crd.Spec.Group + "/" + v.Name
	return marshal(s)
}

func constProps(key, value string) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	p := jsonschema.NewProperties()
	p.Set(key, &jsonschema.Schema{Const: value})
	return p
}

// configSchema reflects a driver's options type, with field comments as
// descriptions.
func configSchema(d drivers.Driver) (*jsonschema.Schema, error) {
	t := reflect.TypeOf(d.NewConfig())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	rel := strings.TrimPrefix(t.PkgPath(), Module+"/")
	if err := r.AddGoComments(Module, "./"+rel); err != nil {
		return nil, fmt.Errorf("read doc comments of %s (run from the repository root): %w", rel, err)
	}
	if err := r.AddGoComments(Module, "./drivers"); err != nil {
		return nil, err
	}
	s := r.ReflectFromType(t)
	s.Version = ""
	return s, nil
}

// controllerSchema describes buckety-controller.yaml: the config type, with
// each backend's config validated by its driver's schema.
func controllerSchema(driverNames []string, branches []*jsonschema.Schema) ([]byte, error) {
	s, err := controllerConfigSchema(driverNames)
	if err != nil {
		return nil, err
	}
	backends, _ := s.Properties.Get("backends")
	backends.Items.AllOf = branches
	return marshal(s)
}

// controllerConfigSchema reflects config.Config, with field comments as
// descriptions and the driver field limited to the registered drivers.
func controllerConfigSchema(driverNames []string) (*jsonschema.Schema, error) {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	if err := r.AddGoComments(Module, "./internal/config"); err != nil {
		return nil, fmt.Errorf("read doc comments of internal/config (run from the repository root): %w", err)
	}
	s := r.Reflect(&config.Config{})
	s.ID = jsonschema.ID(RawBase + ControllerSchemaPath)
	s.Title = "buckety-controller.yaml"
	backends, ok := s.Properties.Get("backends")
	if !ok || backends.Items == nil {
		return nil, fmt.Errorf("config.Config has no backends list")
	}
	item := backends.Items
	if drv, ok := item.Properties.Get("driver"); ok {
		enum := make([]any, len(driverNames))
		for i, n := range driverNames {
			enum[i] = n
		}
		drv.Enum = enum
	}
	if cfg, ok := item.Properties.Get("config"); ok {
		cfg.Type = "object"
	}
	return s, nil
}

func marshal(s any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	// jsonschema.Schema marshals itself with HTML escaping; undo it so the
	// published files read naturally (the characters are valid JSON).
	b := bytes.ReplaceAll(buf.Bytes(), []byte(`\u003c`), []byte("<"))
	b = bytes.ReplaceAll(b, []byte(`\u003e`), []byte(">"))
	return bytes.ReplaceAll(b, []byte(`\u0026`), []byte("&")), nil
}

// WriteSchemas writes Schemas under root and removes schema files of driver
// versions that are no longer built (a major or minor bump moves the
// directory).
func WriteSchemas(root string, reg *drivers.Registry) ([]string, error) {
	files, err := Schemas(reg)
	if err != nil {
		return nil, err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return nil, err
		}
	}
	return paths, nil
}
