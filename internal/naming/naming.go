package naming

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultTemplate is the template used when spec.name is omitted: the
// Buckety's own name, with no other substitution.
const DefaultTemplate = "${name}"

// Kind is the kind of a substitution reference.
type Kind int

const (
	// Name is ${name}: metadata.name.
	Name Kind = iota + 1
	// Namespace is ${namespace}: metadata.namespace.
	Namespace
	// Label is ${label['key']}: metadata.labels[key].
	Label
	// Backend is ${backend.key}: the backend's defaults[key].
	Backend
)

// Ref is one ${...} reference in a template.
type Ref struct {
	Kind Kind
	// Key is the label key or backend default key; empty otherwise.
	Key string
}

// String renders the reference in canonical template syntax.
func (r Ref) String() string {
	switch r.Kind {
	case Name:
		return "${name}"
	case Namespace:
		return "${namespace}"
	case Label:
		return "${label['" + r.Key + "']}"
	case Backend:
		return "${backend." + r.Key + "}"
	}
	return "${?}"
}

// describe says where the value of a missing reference comes from.
func (r Ref) describe(backend string) string {
	switch r.Kind {
	case Name:
		return "${name}: metadata.name is empty"
	case Namespace:
		return "${namespace}: metadata.namespace is empty"
	case Label:
		return fmt.Sprintf("${label['%s']}: the Buckety has no label %q (set metadata.labels[%q])", r.Key, r.Key, r.Key)
	case Backend:
		return fmt.Sprintf("${backend.%s}: backend %q has no defaults.%s in the controller config (ask the cluster maintainer, or remove it from spec.name)", r.Key, backend, r.Key)
	}
	return r.String()
}

type part struct {
	lit string
	ref *Ref
}

// Template is a parsed naming template.
type Template struct {
	src   string
	parts []part
}

// SyntaxError is a malformed template, with the 1-based column of the problem.
type SyntaxError struct {
	Template string
	Column   int
	Msg      string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("template %q, column %d: %s", e.Template, e.Column, e.Msg)
}

// MissingError lists every reference whose source is not set.
type MissingError struct {
	Template string
	Missing  []string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("template %q cannot be resolved: %s", e.Template, strings.Join(e.Missing, "; "))
}

// Parse parses a template. The empty string parses as DefaultTemplate.
func Parse(s string) (*Template, error) {
	if s == "" {
		s = DefaultTemplate
	}
	t := &Template{src: s}
	var lit strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' {
			lit.WriteByte(s[i])
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			return nil, &SyntaxError{Template: s, Column: i + 1, Msg: `"$" must start a ${...} reference; "$" is not allowed in resource names`}
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return nil, &SyntaxError{Template: s, Column: i + 1, Msg: `"${" is not closed with "}"`}
		}
		ref, err := parseRef(s, i+2, s[i+2:i+2+end])
		if err != nil {
			return nil, err
		}
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			lit.Reset()
		}
		t.parts = append(t.parts, part{ref: ref})
		i += 2 + end + 1
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{lit: lit.String()})
	}
	return t, nil
}

// parseRef parses the text between "${" and "}"; off is its byte offset in s.
func parseRef(s string, off int, expr string) (*Ref, error) {
	bad := func(col int, msg string) error {
		return &SyntaxError{Template: s, Column: col + 1, Msg: msg}
	}
	switch {
	case expr == "name":
		return &Ref{Kind: Name}, nil
	case expr == "namespace":
		return &Ref{Kind: Namespace}, nil
	case strings.HasPrefix(expr, "label["):
		rest := expr[len("label["):]
		if len(rest) < 3 || (rest[0] != '\'' && rest[0] != '"') {
			return nil, bad(off+len("label["), `want a quoted label key, as in ${label['example.com/key']}`)
		}
		q := rest[0]
		closeAt := strings.IndexByte(rest[1:], q)
		if closeAt < 0 {
			return nil, bad(off+len("label["), "label key quote is not closed")
		}
		key := rest[1 : 1+closeAt]
		if tail := rest[1+closeAt+1:]; tail != "]" {
			return nil, bad(off+len("label[")+closeAt+2, `want "]" right after the closing quote of the label key`)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, bad(off+len("label[")+1, fmt.Sprintf("%q is not a valid label key: %s", key, strings.Join(errs, "; ")))
		}
		return &Ref{Kind: Label, Key: key}, nil
	case strings.HasPrefix(expr, "backend."):
		key := expr[len("backend."):]
		if !ValidBackendKey(key) {
			return nil, bad(off+len("backend."), fmt.Sprintf("%q is not a valid backend default key (letters, digits, _ and -, starting with a letter or _)", key))
		}
		return &Ref{Kind: Backend, Key: key}, nil
	}
	return nil, bad(off, fmt.Sprintf("unknown reference ${%s}; want ${name}, ${namespace}, ${label['key']} or ${backend.key}", expr))
}

// ValidBackendKey reports whether key can be referenced as ${backend.key}.
// The controller config validates its defaults keys with it, so every default
// a maintainer defines can be used in a template.
func ValidBackendKey(key string) bool {
	if key == "" {
		return false
	}
	for i, r := range key {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case (r >= '0' && r <= '9' || r == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// String returns the template as written (DefaultTemplate for "").
func (t *Template) String() string { return t.src }

// Refs returns the references of the template in order of appearance.
func (t *Template) Refs() []Ref {
	var out []Ref
	for _, p := range t.parts {
		if p.ref != nil {
			out = append(out, *p.ref)
		}
	}
	return out
}

// Source holds the values a template can reference.
type Source struct {
	Name      string
	Namespace string
	Labels    map[string]string
	// BackendName is used only in error messages.
	BackendName string
	// Defaults is the backend's defaults map from the controller config.
	Defaults map[string]string
}

// MaxResolved is the longest name Resolve returns, four times the longest
// any driver takes (a Kafka topic's 249): a template that repeats a long
// name or label is refused before its result grows with the product of
// the two (a 118 KB object resolved to 280 MB in the webhook).
const MaxResolved = 1024

// Resolve substitutes every reference from src in a single pass. A label or
// default that is present with an empty value resolves to the empty string;
// one that is absent is missing. All missing sources are reported together in
// a *MissingError.
func (t *Template) Resolve(src Source) (string, error) {
	var b strings.Builder
	missing := map[string]bool{}
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.lit)
		} else if v, ok := lookup(*p.ref, src); ok {
			b.WriteString(v)
		} else {
			missing[p.ref.describe(src.BackendName)] = true
		}
		if b.Len() > MaxResolved {
			return "", fmt.Errorf("template %q resolves to more than %d characters", t.src, MaxResolved)
		}
	}
	if len(missing) > 0 {
		list := make([]string, 0, len(missing))
		for m := range missing {
			list = append(list, m)
		}
		sort.Strings(list)
		return "", &MissingError{Template: t.src, Missing: list}
	}
	return b.String(), nil
}

func lookup(r Ref, src Source) (string, bool) {
	switch r.Kind {
	case Name:
		return src.Name, src.Name != ""
	case Namespace:
		return src.Namespace, src.Namespace != ""
	case Label:
		v, ok := src.Labels[r.Key]
		return v, ok
	case Backend:
		v, ok := src.Defaults[r.Key]
		return v, ok
	}
	return "", false
}

// Skeleton renders the template with every ${backend.key} replaced by
// defaults[key] and every other reference kept in canonical syntax, for
// checks that reason about what a tenant can and cannot influence. A
// missing default is reported like Resolve reports it.
func (t *Template) Skeleton(backend string, defaults map[string]string) (string, error) {
	var b strings.Builder
	var missing []string
	for _, p := range t.parts {
		switch {
		case p.ref == nil:
			b.WriteString(p.lit)
		case p.ref.Kind == Backend:
			v, ok := defaults[p.ref.Key]
			if !ok {
				missing = append(missing, p.ref.describe(backend))
				continue
			}
			b.WriteString(v)
		default:
			b.WriteString(p.ref.String())
		}
	}
	if len(missing) > 0 {
		return "", &MissingError{Template: t.src, Missing: missing}
	}
	return b.String(), nil
}

// Resolve parses and resolves tmpl in one call.
func Resolve(tmpl string, src Source) (string, error) {
	t, err := Parse(tmpl)
	if err != nil {
		return "", err
	}
	return t.Resolve(src)
}
