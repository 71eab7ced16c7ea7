// Package fuzzinput turns the flat strings a Go fuzz target receives into the
// structured values buckety's validators take (string maps, with nil kept
// distinct from empty), and reads seed corpora from the repository's real
// examples, so every fuzz target starts from input a user would write.
package fuzzinput

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Map decodes "k=v" lines into a map. A line without "=" is a key with an
// empty value; later lines win. The empty string is an empty, non-nil map,
// so "no parameters" and "parameters: {}" are both reachable with nil
// chosen by the caller.
func Map(s string) map[string]string {
	m := map[string]string{}
	if s == "" {
		return m
	}
	for _, line := range strings.Split(s, "\n") {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// Encode is the inverse of Map for maps without newlines in keys or values
// and without "=" in keys, for seeding.
func Encode(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for k, v := range m {
		lines = append(lines, k+"="+v)
	}
	return strings.Join(lines, "\n")
}

// Documents returns every YAML document of the files matching the globs,
// relative to the working directory (a test runs in its package directory).
func Documents(globs ...string) ([][]byte, error) {
	var out [][]byte
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			for _, doc := range bytes.Split(data, []byte("\n---")) {
				if len(bytes.TrimSpace(doc)) > 0 {
					out = append(out, doc)
				}
			}
		}
	}
	return out, nil
}

// Objects returns, as JSON, every document of the files matching the globs
// whose kind is one of kinds.
func Objects(kinds []string, globs ...string) ([][]byte, error) {
	docs, err := Documents(globs...)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, d := range docs {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(d, &meta); err != nil {
			continue // not every example file is an object (kustomizations, configs)
		}
		for _, k := range kinds {
			if meta.Kind == k {
				js, err := yaml.YAMLToJSON(d)
				if err != nil {
					return nil, err
				}
				out = append(out, js)
			}
		}
	}
	return out, nil
}

// Specs are the spec fields of example objects that seed driver fuzz
// targets.
type Specs struct {
	// Names are spec.name templates and metadata.name values.
	Names []string
	// Parameters are Buckety spec.parameters.
	Parameters []map[string]string
	// AccessParameters are BucketyAccess spec.parameters.
	AccessParameters []map[string]string
	// Roles are spec.role and spec.defaultAccess.role values.
	Roles []string
}

// ExampleSpecs reads the Bucketies and BucketyAccesses of the files matching
// the globs.
func ExampleSpecs(globs ...string) (Specs, error) {
	objs, err := Objects([]string{"Buckety", "BucketyAccess"}, globs...)
	if err != nil {
		return Specs{}, err
	}
	var s Specs
	for _, js := range objs {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Name          string            `json:"name"`
				Parameters    map[string]string `json:"parameters"`
				Role          string            `json:"role"`
				DefaultAccess *struct {
					Role string `json:"role"`
				} `json:"defaultAccess"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(js, &o); err != nil {
			return Specs{}, err
		}
		s.Names = append(s.Names, o.Metadata.Name)
		if o.Spec.Name != "" {
			s.Names = append(s.Names, o.Spec.Name)
		}
		if o.Spec.DefaultAccess != nil && o.Spec.DefaultAccess.Role != "" {
			s.Roles = append(s.Roles, o.Spec.DefaultAccess.Role)
		}
		if o.Spec.Role != "" {
			s.Roles = append(s.Roles, o.Spec.Role)
		}
		switch o.Kind {
		case "Buckety":
			if o.Spec.Parameters != nil {
				s.Parameters = append(s.Parameters, o.Spec.Parameters)
			}
		case "BucketyAccess":
			if o.Spec.Parameters != nil {
				s.AccessParameters = append(s.AccessParameters, o.Spec.Parameters)
			}
		}
	}
	return s, nil
}
