package config

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// taggedPaths lists the JSON paths of fields tagged tag:"true".
func taggedPaths(t reflect.Type, prefix, tag string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		if f.Tag.Get(tag) == "true" {
			out = append(out, p)
			continue
		}
		out = append(out, taggedPaths(f.Type, p, tag)...)
	}
	return out
}

// under reports whether errField is one of paths (relative to p) or inside
// one.
func under(p *field.Path, errField string, paths []string) bool {
	for _, c := range paths {
		full := p.String() + "." + c
		if errField == full || strings.HasPrefix(errField, full+".") || strings.HasPrefix(errField, full+"[") {
			return true
		}
	}
	return false
}

// clearTagged zeroes every field tagged tag:"true".
func clearTagged(v reflect.Value, tag string) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Tag.Get(tag) == "true" {
			v.Field(i).SetZero()
			continue
		}
		clearTagged(v.Field(i), tag)
	}
}
