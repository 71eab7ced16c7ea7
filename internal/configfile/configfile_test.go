package configfile

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type item struct {
	Name   string          `json:"name"`
	Token  string          `json:"token,omitempty" envsubst:"true"`
	Opaque json.RawMessage `json:"opaque,omitempty"`
}

type embedded struct {
	Shared string `json:"shared,omitempty"`
}

type sample struct {
	embedded `json:",inline"`
	Items    []item            `json:"items"`
	Labels   map[string]string `json:"labels,omitempty"`
	Count    int               `json:"count,omitempty"`

	calls []string
	dir   string
}

func (s *sample) SetDir(abs string) { s.calls = append(s.calls, "SetDir"); s.dir = abs }
func (s *sample) ApplyDefaults() {
	s.calls = append(s.calls, "ApplyDefaults")
	if s.Count == 0 {
		s.Count = 7
	}
}
func (s *sample) Validate() error {
	s.calls = append(s.calls, "Validate")
	if len(s.Items) == 0 {
		return &Error{Path: "items", Msg: "at least one item is required"}
	}
	return nil
}

func write(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadRunsHooksInOrderAfterSubstitution(t *testing.T) {
	t.Setenv("CF_TOKEN", "t0k")
	dir := write(t, "shared: s\nitems:\n- name: a\n  token: ${CF_TOKEN}\n  opaque: {any: [thing, '${NOT_SUBSTITUTED}']}\n")
	var s sample
	if err := Load(dir, "c.yaml", &s); err != nil {
		t.Fatalf("want no error, got %v", err)
	}
	if got := strings.Join(s.calls, ","); got != "SetDir,ApplyDefaults,Validate" {
		t.Errorf("want hooks SetDir,ApplyDefaults,Validate, got %s", got)
	}
	if s.Items[0].Token != "t0k" {
		t.Errorf("want token t0k, got %q", s.Items[0].Token)
	}
	if s.Count != 7 || s.Shared != "s" {
		t.Errorf("want count 7 and shared s, got %d %q", s.Count, s.Shared)
	}
	if !filepath.IsAbs(s.dir) {
		t.Errorf("want an absolute dir, got %q", s.dir)
	}
	if !strings.Contains(string(s.Items[0].Opaque), "${NOT_SUBSTITUTED}") {
		t.Errorf("raw blocks are decoded later by their owner and must be untouched, got %s", s.Items[0].Opaque)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"unknown top-level key", "itemz: []\n", `itemz: unknown field "itemz"; remove it or fix its spelling (allowed here: count, items, labels, shared)`},
		{"unknown nested key", "items:\n- name: a\n- nmae: b\n", `items[1].nmae: unknown field "nmae"`},
		{"duplicate key", "count: 1\ncount: 2\n", `not valid YAML`},
		{"wrong type", "count: many\n", `count: want a whole number, got "many"`},
		{"wrong type in a list keeps the index", "items:\n- name: a\n- name: [x]\n", `items[1].name: want a string, got a list`},
		{"fraction for a whole number", "count: 1.5\n", `count: want a whole number, got 1.5`},
		{"scalar for a list", "items: a\n", `items: want a list, got "a"`},
		{"scalar for a mapping", "labels: a\n", `labels: want a mapping, got "a"`},
		{"undefined variable", "items:\n- name: a\n  token: ${CF_UNSET_VAR}\n", `items[0].token: environment variable CF_UNSET_VAR is not set`},
		{"untagged substitution", "items:\n- name: ${CF_TOKEN}\n", `items[0].name: contains ${...} but this field does not support environment substitution`},
		{"validate error", "count: 1\n", `items: at least one item is required`},
		{"not yaml", "items: [\n", `not valid YAML`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := write(t, c.body)
			var s sample
			err := Load(dir, "c.yaml", &s)
			if err == nil {
				t.Fatalf("want error containing %q, got none", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want error containing %q, got %q", c.want, err)
			}
			if !strings.HasPrefix(err.Error(), filepath.Join(dir, "c.yaml")+": ") {
				t.Errorf("want the error to start with the file path, got %q", err)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("want a *configfile.Error, got %T", err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	var s sample
	err := Load(t.TempDir(), "absent.yaml", &s)
	if err == nil || !strings.Contains(err.Error(), "file not found: -c names the directory that holds absent.yaml") {
		t.Fatalf("want a file-not-found error naming the -c contract, got %v", err)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("want errors.Is(err, os.ErrNotExist), got %v", err)
	}
}

// TestLoadScalarIntoStringField: a YAML number or boolean in a string field
// loads as its text, as sigs.k8s.io/yaml decodes it (the type check must
// not refuse what the decoder accepts).
func TestLoadScalarIntoStringField(t *testing.T) {
	type withIP struct {
		Addr net.IP `json:"addr"`
	}
	var w withIP
	if err := DecodeStrict([]byte("addr: 127.0.0.1\n"), &w); err != nil || !w.Addr.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("a string into a type that decodes itself from text (net.IP): want 127.0.0.1, got %v, %v", w.Addr, err)
	}

	dir := write(t, "items:\n- name: 123\n- name: true\n")
	var s sample
	if err := Load(dir, "c.yaml", &s); err != nil {
		t.Fatalf("want no error, got %v", err)
	}
	if s.Items[0].Name != "123" || s.Items[1].Name != "true" {
		t.Errorf("want names 123 and true as text, got %q %q", s.Items[0].Name, s.Items[1].Name)
	}
}
