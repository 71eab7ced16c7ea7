package envsubst

import (
	"sort"
	"strings"
	"testing"
)

func env(m map[string]string) LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestExpand(t *testing.T) {
	lookup := env(map[string]string{"A": "alpha", "EMPTY": "", "NESTED": "${A}"})
	cases := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: "${A}", want: "alpha"},
		{in: "x-${A}-y", want: "x-alpha-y"},
		{in: "${A}${A}", want: "alphaalpha"},
		{in: "${MISSING:-fallback}", want: "fallback"},
		{in: "${EMPTY:-fallback}", want: "fallback"},
		{in: "${A:-fallback}", want: "alpha"},
		{in: "${MISSING:-}", want: ""},
		{in: "$$", want: "$"},
		{in: "$${A}", want: "${A}"},
		{in: "cost $5", want: "cost $5"},
		{in: "trailing $", want: "trailing $"},
		{in: "${NESTED}", want: "${A}"}, // single pass: values are not re-scanned
		{in: "${EMPTY}", want: ""},
		{in: "${MISSING}", err: "environment variable MISSING is not set"},
		{in: "${A", err: "unterminated ${ at offset 0"},
		{in: "${}", err: `"" is not a variable name`},
		{in: "${1A}", err: `"1A" is not a variable name`},
		{in: "${A B}", err: `"A B" is not a variable name`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := Expand(c.in, lookup)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want error containing %q, got %v (value %q)", c.err, err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("want %q, got error %v", c.want, err)
			}
			if got != c.want {
				t.Fatalf("want %q, got %q", c.want, got)
			}
		})
	}
}

type inner struct {
	Secret  string            `json:"secret" envsubst:"true"`
	Plain   string            `json:"plain"`
	Labels  map[string]string `json:"labels" envsubst:"true"`
	Raw     []byte            `json:"raw"`
	private string
}

type outer struct {
	Name  string   `json:"name"`
	Items []inner  `json:"items"`
	Ptr   *inner   `json:"ptr,omitempty"`
	List  []string `json:"list" envsubst:"true"`
	Skip  string   `json:"-"`
}

func TestApply(t *testing.T) {
	lookup := env(map[string]string{"S": "s3cr3t", "L": "lv"})
	v := outer{
		Name:  "n",
		Items: []inner{{Secret: "${S}", Plain: "p", Labels: map[string]string{"${KEY}": "${L}"}, Raw: []byte("${RAW}"), private: "${X}"}},
		Ptr:   &inner{Secret: "${MISSING:-d}"},
		List:  []string{"a-${L}", "$$"},
		Skip:  "${IGNORED}",
	}
	if err := Apply(&v, lookup); err != nil {
		t.Fatalf("want no error, got %v", err)
	}
	if got := v.Items[0].Secret; got != "s3cr3t" {
		t.Errorf("items[0].secret: want s3cr3t, got %q", got)
	}
	if got := v.Items[0].Labels["${KEY}"]; got != "lv" {
		t.Errorf("map value: want lv under the unsubstituted key, got %q (map %v)", got, v.Items[0].Labels)
	}
	if got := v.Ptr.Secret; got != "d" {
		t.Errorf("ptr.secret: want d, got %q", got)
	}
	if got := strings.Join(v.List, ","); got != "a-lv,$" {
		t.Errorf("list: want a-lv,$, got %q", got)
	}
	if v.Skip != "${IGNORED}" || v.Items[0].private != "${X}" || string(v.Items[0].Raw) != "${RAW}" {
		t.Errorf("json:\"-\", unexported and []byte fields must be left alone, got %q %q %q", v.Skip, v.Items[0].private, v.Items[0].Raw)
	}
}

func TestApplyErrors(t *testing.T) {
	cases := []struct {
		name string
		v    any
		err  string
	}{
		{"untagged field with ${", &outer{Items: []inner{{}, {Plain: "${S}"}}}, "items[1].plain: contains ${...} but this field does not support environment substitution"},
		{"missing variable names the field", &outer{Ptr: &inner{Secret: "${NOPE}"}}, "ptr.secret: environment variable NOPE is not set"},
		{"untagged map value", &struct {
			M map[string]string `json:"m"`
		}{M: map[string]string{"k": "${S}"}}, "m[k]: contains ${...}"},
		{"not a pointer", outer{}, "want a non-nil pointer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Apply(c.v, env(map[string]string{"S": "x"}))
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("want error containing %q, got %v", c.err, err)
			}
		})
	}
}

func TestNeutralize(t *testing.T) {
	type inner struct {
		Tagged string `json:"tagged" envsubst:"true"`
	}
	type cfg struct {
		Plain   string            `json:"plain"`
		Ref     string            `json:"ref" envsubst:"true"`
		Default string            `json:"default" envsubst:"true"`
		Escaped string            `json:"escaped" envsubst:"true"`
		List    []string          `json:"list" envsubst:"true"`
		Map     map[string]string `json:"map" envsubst:"true"`
		Inner   *inner            `json:"inner"`
	}
	c := &cfg{Plain: "p", Ref: "${A}", Default: "${B:-x}", Escaped: "$${name}", List: []string{"h:1", "${C}"}, Map: map[string]string{"k": "${D}"}, Inner: &inner{Tagged: "pre-${E}"}}
	got, err := Neutralize(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "default,inner.tagged,list[1],map[k],ref"; strings.Join(sorted(got), ",") != want {
		t.Errorf("unresolved: want %s, got %v", want, got)
	}
	if c.Ref != "" || c.Default != "" || c.List[1] != "" || c.Map["k"] != "" || c.Inner.Tagged != "" {
		t.Errorf("want every referencing field cleared, got %+v %+v", c, c.Inner)
	}
	if c.Plain != "p" || c.Escaped != "${name}" || c.List[0] != "h:1" {
		t.Errorf("want literals kept and $$ unescaped, got %+v", c)
	}
	for _, bad := range []*cfg{{Plain: "${X}"}, {Ref: "${unterminated"}, {Ref: "${1X}"}} {
		if _, err := Neutralize(bad); err == nil {
			t.Errorf("%+v: want the error Apply reports, got none", bad)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
