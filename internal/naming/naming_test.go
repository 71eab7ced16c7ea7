package naming

import (
	"errors"
	"strings"
	"testing"
)

var src = Source{
	Name:        "orders",
	Namespace:   "tenant1",
	Labels:      map[string]string{"yolean.se/generation": "003", "plain": "p", "empty": "", "tricky": "${name}"},
	BackendName: "cluster-kafka",
	Defaults:    map[string]string{"zone": "local", "region-code": "eu1"},
}

func TestResolve(t *testing.T) {
	cases := []struct {
		tmpl, want string
	}{
		{"", "orders"},
		{"${name}", "orders"},
		{"literal-only", "literal-only"},
		{"${namespace}.${name}.v${label['yolean.se/generation']}", "tenant1.orders.v003"},
		{`${label["yolean.se/generation"]}`, "003"},
		{"${label['plain']}", "p"},
		{"a${label['empty']}b", "ab"},
		{"${backend.zone}-${backend.region-code}", "local-eu1"},
		{"${name}${name}", "ordersorders"},
		{"x-${label['tricky']}", "x-${name}"}, // single pass: substituted values are not re-scanned
		{"${namespace}-${name}-${backend.zone}", "tenant1-orders-local"},
		{"{name}", "{name}"},
		{"}", "}"},
	}
	for _, c := range cases {
		t.Run(c.tmpl, func(t *testing.T) {
			got, err := Resolve(c.tmpl, src)
			if err != nil {
				t.Fatalf("want %q, got error %v", c.want, err)
			}
			if got != c.want {
				t.Fatalf("want %q, got %q", c.want, got)
			}
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		tmpl   string
		column int
		msg    string
	}{
		{"a$b", 2, `"$" must start a ${...} reference`},
		{"ab$", 3, `"$" must start a ${...} reference`},
		{"x${name", 2, `"${" is not closed`},
		{"${nme}", 3, `unknown reference ${nme}`},
		{"${ name }", 3, `unknown reference ${ name }`},
		{"${}", 3, `unknown reference ${}`},
		{"${label[gen]}", 9, `want a quoted label key`},
		{"${label['gen]}", 9, `label key quote is not closed`},
		{"${label['gen']x}", 14, `want "]" right after the closing quote`},
		{"${label['bad key']}", 10, `"bad key" is not a valid label key`},
		{"${label['a/b/c']}", 10, `"a/b/c" is not a valid label key`},
		{"${label['']}", 10, `"" is not a valid label key`},
		{"ab${backend.}", 13, `"" is not a valid backend default key`},
		{"${backend.1zone}", 11, `"1zone" is not a valid backend default key`},
		{"${backend.zo.ne}", 11, `"zo.ne" is not a valid backend default key`},
	}
	for _, c := range cases {
		t.Run(c.tmpl, func(t *testing.T) {
			_, err := Parse(c.tmpl)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("want *SyntaxError, got %v", err)
			}
			if se.Column != c.column {
				t.Errorf("want column %d, got %d (%v)", c.column, se.Column, err)
			}
			if !strings.Contains(se.Msg, c.msg) {
				t.Errorf("want message containing %q, got %q", c.msg, se.Msg)
			}
			if !strings.Contains(err.Error(), c.tmpl) {
				t.Errorf("want the template quoted in the error, got %q", err)
			}
		})
	}
}

func TestMissingReportsEverySourceAtOnce(t *testing.T) {
	tmpl := "${namespace}.${label['yolean.se/generation']}.${label['absent.example/x']}.${backend.nozone}.${label['absent.example/x']}"
	_, err := Resolve(tmpl, Source{Name: "n", Labels: map[string]string{"yolean.se/generation": "1"}, BackendName: "kafka"})
	var me *MissingError
	if !errors.As(err, &me) {
		t.Fatalf("want *MissingError, got %v", err)
	}
	want := []string{
		`${backend.nozone}: backend "kafka" has no defaults.nozone in the controller config`,
		`${label['absent.example/x']}: the Buckety has no label "absent.example/x"`,
		`${namespace}: metadata.namespace is empty`,
	}
	if len(me.Missing) != len(want) {
		t.Fatalf("want %d missing sources (each once), got %d: %q", len(want), len(me.Missing), me.Missing)
	}
	for i, w := range want {
		if !strings.HasPrefix(me.Missing[i], w) {
			t.Errorf("missing[%d]: want prefix %q, got %q", i, w, me.Missing[i])
		}
	}
}

func TestRefs(t *testing.T) {
	tp, err := Parse("${namespace}-x-${label['a.b/c']}-${backend.zone}-${name}")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range tp.Refs() {
		got = append(got, r.String())
	}
	want := "${namespace} ${label['a.b/c']} ${backend.zone} ${name}"
	if strings.Join(got, " ") != want {
		t.Fatalf("want %q, got %q", want, strings.Join(got, " "))
	}
	if tp.String() != "${namespace}-x-${label['a.b/c']}-${backend.zone}-${name}" {
		t.Errorf("want String to return the source, got %q", tp.String())
	}
}

func TestValidBackendKey(t *testing.T) {
	for k, want := range map[string]bool{"zone": true, "_z": true, "region-code": true, "Z9": true, "": false, "9z": false, "-z": false, "a.b": false, "a b": false} {
		if got := ValidBackendKey(k); got != want {
			t.Errorf("ValidBackendKey(%q): want %v, got %v", k, want, got)
		}
	}
}

// FuzzParse checks properties that must hold for any input: Parse never
// panics; an accepted template resolves when every source it references is
// present; the result holds every literal part; and rendering the references
// back gives a template that parses to the same references.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "${name}", "${namespace}.${name}.v${label['yolean.se/generation']}", "${backend.zone}", "a$b", "${label[\"x\"]}", "${", "$$", "}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("want *SyntaxError, got %T %v", err, err)
			}
			if se.Column < 1 || se.Column > len(s) {
				t.Fatalf("column %d outside template of length %d", se.Column, len(s))
			}
			return
		}
		full := Source{Name: "n", Namespace: "ns", Labels: map[string]string{}, Defaults: map[string]string{}}
		var canon strings.Builder
		for _, p := range tp.parts {
			if p.ref == nil {
				canon.WriteString(p.lit)
				continue
			}
			canon.WriteString(p.ref.String())
			switch p.ref.Kind {
			case Label:
				full.Labels[p.ref.Key] = "L"
			case Backend:
				full.Defaults[p.ref.Key] = "B"
			}
		}
		out, err := tp.Resolve(full)
		if err != nil {
			t.Fatalf("want resolution with every source present, got %v", err)
		}
		for _, p := range tp.parts {
			if p.ref == nil && !strings.Contains(out, p.lit) {
				t.Fatalf("literal %q missing from %q", p.lit, out)
			}
		}
		again, err := Parse(canon.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon.String(), s, err)
		}
		if a, b := len(again.Refs()), len(tp.Refs()); a != b {
			t.Fatalf("canonical form has %d refs, want %d", a, b)
		}
	})
}

// TestResolveStopsAtMaxResolved: a template that repeats a long name is
// refused as soon as its result passes MaxResolved, whatever it would
// grow to; one that resolves to exactly MaxResolved characters resolves.
func TestResolveStopsAtMaxResolved(t *testing.T) {
	tmpl, err := Parse(strings.Repeat("${name}", 14000))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Resolve(Source{Name: strings.Repeat("a", 253)}); err == nil || !strings.Contains(err.Error(), "resolves to more than 1024 characters") {
		t.Errorf("want refused past %d characters, got %d characters, %v", MaxResolved, len(got), err)
	}
	exact, err := Parse(strings.Repeat("${name}", 4))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := exact.Resolve(Source{Name: strings.Repeat("a", MaxResolved/4)}); err != nil || len(got) != MaxResolved {
		t.Errorf("want %d characters resolved, got %d, %v", MaxResolved, len(got), err)
	}
}
