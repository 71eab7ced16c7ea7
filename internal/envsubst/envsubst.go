package envsubst

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// TagName is the struct tag that opts a field into substitution.
const TagName = "envsubst"

// LookupFunc returns the value of a variable and whether it is set, with the
// semantics of os.LookupEnv.
type LookupFunc func(name string) (string, bool)

// OSEnv looks variables up in the process environment.
var OSEnv LookupFunc = os.LookupEnv

// Error is a substitution failure at a field path, such as
// "backends[1].config.accessKeyID".
type Error struct {
	// Path is the field path in JSON naming; empty for Expand.
	Path string
	// Msg says what is wrong and how to fix it.
	Msg string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Expand substitutes ${VAR}, ${VAR:-default} and $$ in s. A ${VAR} whose
// variable is unset is an error; ${VAR:-default} uses default when VAR is
// unset or empty. Substituted values are not re-scanned. A "$" that starts
// neither "${" nor "$$" is kept literally.
func Expand(s string, lookup LookupFunc) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", &Error{Msg: fmt.Sprintf("unterminated ${ at offset %d: close it with } or write $$ for a literal $", i)}
			}
			expr := s[i+2 : i+2+end]
			v, err := resolve(expr, lookup)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i += 2 + end + 1
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

func resolve(expr string, lookup LookupFunc) (string, error) {
	name, def, hasDefault := strings.Cut(expr, ":-")
	if !validName(name) {
		return "", &Error{Msg: fmt.Sprintf("${%s}: %q is not a variable name (letters, digits and _, not starting with a digit)", expr, name)}
	}
	v, ok := lookup(name)
	if hasDefault {
		if !ok || v == "" {
			return def, nil
		}
		return v, nil
	}
	if !ok {
		return "", &Error{Msg: fmt.Sprintf("environment variable %s is not set: set it, or write ${%s:-default} to make it optional, or $${%s} for a literal ${%s}", name, name, name, name)}
	}
	return v, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Apply walks v, which must be a non-nil pointer, and substitutes every string
// (or string-valued map and slice element) in fields tagged `envsubst:"true"`.
// A string in an untagged field that contains "${" is an error. Field paths in
// errors use the JSON names of the fields.
func Apply(v any, lookup LookupFunc) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("envsubst.Apply: want a non-nil pointer, got %T", v)
	}
	return walk(rv.Elem(), "", false, func(s, path string, tagged bool) (string, error) {
		return str(s, path, tagged, lookup)
	})
}

// Neutralize walks v like Apply, for a caller that validates a file without
// the environment it will run with (an admission webhook reading a
// controller's config). It substitutes no variable: every tagged string
// that references one (${VAR} or ${VAR:-default}, set or not) is cleared and
// its path returned, so the caller can skip the checks that need its value.
// Tagged strings without a reference are unescaped ($$) as Apply does, and
// malformed references and "${" in untagged fields are errors, as with Apply,
// so Neutralize fails on every file Apply fails on whatever the environment.
func Neutralize(v any) (unresolved []string, err error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("envsubst.Neutralize: want a non-nil pointer, got %T", v)
	}
	err = walk(rv.Elem(), "", false, func(s, path string, tagged bool) (string, error) {
		referenced := false
		out, err := str(s, path, tagged, func(string) (string, bool) { referenced = true; return "", true })
		if err != nil {
			return "", err
		}
		if referenced {
			unresolved = append(unresolved, path)
			return "", nil
		}
		return out, nil
	})
	return unresolved, err
}

// strFunc substitutes one string at path; tagged is whether its field opted
// into substitution.
type strFunc func(s, path string, tagged bool) (string, error)

func walk(v reflect.Value, path string, tagged bool, fn strFunc) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return walk(v.Elem(), path, tagged, fn)
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, skip := jsonName(f)
			if skip {
				continue
			}
			p := join(path, name)
			if f.Anonymous && name == "" {
				p = path
			}
			if err := walk(v.Field(i), p, f.Tag.Get(TagName) == "true", fn); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // raw bytes are opaque
		}
		for i := 0; i < v.Len(); i++ {
			if err := walk(v.Index(i), path+"["+strconv.Itoa(i)+"]", tagged, fn); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		type update struct{ k, v reflect.Value }
		var updates []update
		for iter.Next() {
			k, val := iter.Key(), iter.Value()
			p := path + "[" + fmt.Sprint(k.Interface()) + "]"
			if val.Kind() == reflect.String {
				s, err := fn(val.String(), p, tagged)
				if err != nil {
					return err
				}
				if s != val.String() {
					nv := reflect.New(val.Type()).Elem()
					nv.SetString(s)
					updates = append(updates, update{k, nv})
				}
				continue
			}
			// Non-string map values are walked on a copy and stored back.
			cp := reflect.New(val.Type()).Elem()
			cp.Set(val)
			if err := walk(cp, p, tagged, fn); err != nil {
				return err
			}
			updates = append(updates, update{k, cp})
		}
		for _, u := range updates {
			v.SetMapIndex(u.k, u.v)
		}
	case reflect.String:
		s, err := fn(v.String(), path, tagged)
		if err != nil {
			return err
		}
		if v.CanSet() {
			v.SetString(s)
		}
	}
	return nil
}

func str(s, path string, tagged bool, lookup LookupFunc) (string, error) {
	if !tagged {
		if strings.Contains(s, "${") {
			return "", &Error{Path: path, Msg: "contains ${...} but this field does not support environment substitution: use a literal value"}
		}
		return s, nil
	}
	out, err := Expand(s, lookup)
	var e *Error
	if errors.As(err, &e) {
		return "", &Error{Path: path, Msg: e.Msg}
	}
	return out, nil
}

func jsonName(f reflect.StructField) (name string, skip bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", true
	}
	name, _, _ = strings.Cut(tag, ",")
	if name == "" && !f.Anonymous {
		name = f.Name
	}
	return name, false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
