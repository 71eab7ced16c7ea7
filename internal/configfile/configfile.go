package configfile

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/internal/envsubst"
)

// DirSetter is implemented by configuration types that resolve relative
// paths against the directory the file was loaded from.
type DirSetter interface {
	SetDir(abs string)
}

// Defaulter is implemented by configuration types that fill in defaults after
// decoding and substitution.
type Defaulter interface {
	ApplyDefaults()
}

// Substituter is implemented by configuration types that substitute their
// own tagged fields, for example from a lookup other than the process
// environment, or not at all when a file is only being validated. Load
// calls Substitute instead of envsubst.Apply with the process environment.
type Substituter interface {
	Substitute() error
}

// Validator is implemented by configuration types that check themselves after
// defaults are applied.
type Validator interface {
	Validate() error
}

// Error is a configuration error tied to a file and, where known, a field path.
type Error struct {
	// File is the path of the configuration file.
	File string
	// Path is the field path, such as "backends[1].config.seedBrokers".
	Path string
	// Msg says what is wrong and how to fix it.
	Msg string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads dir/filename into v strictly, substitutes tagged fields from the
// process environment (or calls Substitute when v is a Substituter), and then calls SetDir, ApplyDefaults and Validate on v
// when it implements them.
func Load[T any](dir, filename string, v *T) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("config dir %q: %w", dir, err)
	}
	file := filepath.Join(abs, filename)
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &Error{File: file, Msg: fmt.Sprintf("file not found: -c names the directory that holds %s", filename), Err: err}
		}
		return &Error{File: file, Msg: err.Error(), Err: err}
	}
	if err := DecodeStrict(data, v); err != nil {
		return withFile(err, file)
	}
	if sub, ok := any(v).(Substituter); ok {
		if err := sub.Substitute(); err != nil {
			return withFile(err, file)
		}
	} else if err := envsubst.Apply(v, envsubst.OSEnv); err != nil {
		return withFile(err, file)
	}
	if s, ok := any(v).(DirSetter); ok {
		s.SetDir(abs)
	}
	if d, ok := any(v).(Defaulter); ok {
		d.ApplyDefaults()
	}
	if val, ok := any(v).(Validator); ok {
		if err := val.Validate(); err != nil {
			return withFile(err, file)
		}
	}
	return nil
}

// withFile attaches the file name to err, keeping a field path the error
// already carries.
func withFile(err error, file string) error {
	var ce *Error
	if errors.As(err, &ce) {
		c := *ce
		c.File = file
		return &c
	}
	var ee *envsubst.Error
	if errors.As(err, &ee) {
		return &Error{File: file, Path: ee.Path, Msg: ee.Msg, Err: err}
	}
	return &Error{File: file, Msg: err.Error(), Err: err}
}

// DecodeStrict decodes YAML (or JSON) into v, failing on duplicate keys, on
// keys that v's type does not have and on values of the wrong type. Errors
// carry the field path of the offending key.
func DecodeStrict(data []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return &Error{Msg: "not valid YAML: " + err.Error(), Err: err}
	}
	// Numbers keep their text (json.Number): a value checked on its own
	// (checkFields) is decoded from what the file says, not from a
	// float64 that rounds 9223372036854775807 up past int64.
	var generic any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return &Error{Msg: "not valid YAML: " + err.Error(), Err: err}
	}
	if err := checkFields(generic, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &Error{Path: te.Field, Msg: fmt.Sprintf("want a %s, got a JSON %s", te.Type, te.Value), Err: err}
		}
		return &Error{Msg: err.Error(), Err: err}
	}
	return nil
}

var (
	rawMessageType      = reflect.TypeOf(json.RawMessage(nil))
	unmarshalerType     = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
	textUnmarshalerType = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
)

// checkFields walks decoded JSON alongside the Go type it will decode into and
// reports the first key the type does not know, with its path.
func checkFields(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Types that decode themselves (a string into a duration, say) are
	// checked by their own decoder, here, so that its error carries the
	// field's path (the whole file's decode names none). A raw message is
	// decoded later by whoever reads it.
	if t == rawMessageType {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if v == nil {
			// null: left to the whole decode, which leaves a pointer
			// field nil rather than call its decoder.
			return nil
		}
		js, err := json.Marshal(v)
		if err != nil {
			return &Error{Path: path, Msg: err.Error(), Err: err}
		}
		if err := json.Unmarshal(js, reflect.New(t).Interface()); err != nil {
			return &Error{Path: path, Msg: err.Error(), Err: err}
		}
		return nil
	}
	if err := checkKind(v, t, path); err != nil {
		return err
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := structFields(t)
			for _, k := range sortedKeys(x) {
				ft, ok := fields[k]
				if !ok {
					return &Error{Path: joinPath(path, k), Msg: fmt.Sprintf("unknown field %q; remove it or fix its spelling (allowed here: %s)", k, strings.Join(sortedKeys(fields), ", "))}
				}
				if err := checkFields(x[k], ft, joinPath(path, k)); err != nil {
					return err
				}
			}
		case reflect.Map:
			for _, k := range sortedKeys(x) {
				if err := checkFields(x[k], t.Elem(), path+"["+k+"]"); err != nil {
					return err
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range x {
				if err := checkFields(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkKind reports a JSON value that cannot decode into t, with its full
// path (encoding/json's own type error drops array indexes).
func checkKind(v any, t reflect.Type, path string) error {
	if v == nil || t.Kind() == reflect.Interface {
		return nil
	}
	var want string
	switch t.Kind() {
	case reflect.String:
		// sigs.k8s.io/yaml decodes a YAML number or boolean into a string
		// field as its text (region: 1, enabled: yes), so only lists and
		// mappings are wrong here.
		switch v.(type) {
		case map[string]any, []any:
			want = "a string"
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			want = "true or false"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !wholeNumber(v) {
			want = "a whole number"
		}
	case reflect.Float32, reflect.Float64:
		if n, ok := v.(json.Number); !ok {
			want = "a number"
		} else if _, err := n.Float64(); err != nil {
			want = "a number"
		}
	case reflect.Struct, reflect.Map:
		if _, ok := v.(map[string]any); !ok {
			want = "a mapping"
		}
	case reflect.Slice, reflect.Array:
		if _, ok := v.([]any); !ok {
			want = "a list"
		}
	}
	if want == "" {
		return nil
	}
	return &Error{Path: path, Msg: fmt.Sprintf("want %s, got %s", want, describeJSON(v))}
}

// describeJSON names a decoded JSON value for an error message.
func describeJSON(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case bool, float64, json.Number:
		return fmt.Sprint(x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

// structFields maps JSON names to field types, flattening embedded structs
// the way encoding/json does.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// wholeNumber reports whether v, a decoded JSON value, is a whole number
// (written as one, or as 3.0 or 1e3, which the decode takes too).
func wholeNumber(v any) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	if _, err := n.Int64(); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(string(n), 10, 64); err == nil {
		return true
	}
	f, err := n.Float64()
	return err == nil && f == float64(int64(f))
}
