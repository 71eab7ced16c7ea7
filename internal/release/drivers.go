package release

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/drivers"
)

// Driver is what the harness needs to know of one registered driver.
type Driver struct {
	// Name is the driver's registered name.
	Name string
	// Version is the compiled-in SemVer.
	Version drivers.Version
	// Package is the import path of the driver's package, where its
	// version variable is (drivers.Version documents the convention).
	Package string
}

// Drivers lists the registered drivers, sorted by name: the one list the
// build and e2e scripts read, so that a driver registered in drivers/all is
// known to them with no other change.
func Drivers(reg *drivers.Registry) []Driver {
	var out []Driver
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		t := reflect.TypeOf(d)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		out = append(out, Driver{Name: name, Version: d.Version(), Package: t.PkgPath()})
	}
	return out
}

// Bump names a version a build can stamp on every driver.
type Bump string

// The bumps the driver-version e2e scenario runs the controller with.
const (
	NextPatch Bump = "next-patch"
	NextMajor Bump = "next-major"
)

// Next returns v after the bump.
func (b Bump) Next(v drivers.Version) (drivers.Version, error) {
	switch b {
	case NextPatch:
		return drivers.Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}, nil
	case NextMajor:
		return drivers.Version{Major: v.Major + 1}, nil
	}
	return drivers.Version{}, fmt.Errorf("unknown bump %q: want %s or %s", b, NextPatch, NextMajor)
}

// VersionLDFlags returns the -ldflags -X arguments that stamp every driver
// with its version after the bump, space-separated.
func VersionLDFlags(reg *drivers.Registry, b Bump) (string, error) {
	var out []string
	for _, d := range Drivers(reg) {
		v, err := b.Next(d.Version)
		if err != nil {
			return "", err
		}
		out = append(out, "-X "+d.Package+".version="+v.String())
	}
	return strings.Join(out, " "), nil
}

// ConfigDrivers returns the drivers a buckety-controller.yaml names, once
// each in the order of first use; a driver that is not registered is an
// error. It reads only the backends' driver fields, so a config with
// unfilled placeholders (an e2e overlay before its prepare.sh) is fine.
func ConfigDrivers(reg *drivers.Registry, config []byte) ([]string, error) {
	var c struct {
		Backends []struct {
			Name   string `json:"name"`
			Driver string `json:"driver"`
		} `json:"backends"`
	}
	if err := yaml.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for i, b := range c.Backends {
		if _, ok := reg.Get(b.Driver); !ok {
			return nil, fmt.Errorf("backends[%d] (%s): driver %q is not registered (registered: %s)", i, b.Name, b.Driver, strings.Join(reg.Names(), ", "))
		}
		if !seen[b.Driver] {
			seen[b.Driver] = true
			out = append(out, b.Driver)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no backends")
	}
	return out, nil
}

// ExpectedSecretKeys returns, sorted, the names of the required keys plus
// the optional keys named: the keys a Secret that has those optional keys
// holds. An optional key named may be one of a per-resource key's
// (topic.orders). Naming a key that is not an optional key of the
// declaration is an error.
func ExpectedSecretKeys(keys []drivers.SecretKey, optional []string) ([]string, error) {
	names := drivers.RequiredSecretKeys(keys)
	for _, o := range optional {
		i := slices.IndexFunc(keys, func(k drivers.SecretKey) bool { return k.Optional && k.IsKey(o) })
		if i < 0 {
			return nil, fmt.Errorf("%q is not an optional key (optional: %v)", o, optionalNames(keys))
		}
		names = append(names, o)
	}
	sort.Strings(names)
	return names, nil
}

func optionalNames(keys []drivers.SecretKey) []string {
	var out []string
	for _, k := range keys {
		if k.Optional {
			out = append(out, keyName(k))
		}
	}
	return out
}

// keyName is how docs and messages spell a key: its name, or for a
// per-resource key, its name and .<buckety>.
func keyName(k drivers.SecretKey) string {
	if k.PerResource {
		return drivers.SeveralKey(k.Name, "<buckety>")
	}
	return k.Name
}
