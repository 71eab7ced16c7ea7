package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/configfile"
	"github.com/Yolean/buckety-controller/internal/envsubst"
	"github.com/Yolean/buckety-controller/internal/naming"
)

// Filename is the name of the config file inside the -c directory.
const Filename = "buckety-controller.yaml"

// Config is the content of buckety-controller.yaml.
type Config struct {
	// Backends are the named backing-service connections a Buckety can
	// select with spec.backend.
	Backends []Backend `json:"backends"`

	opts Options
	dir  string
}

// Backend is one named connection to a backing service.
type Backend struct {
	// Name is what Buckety.spec.backend refers to: a DNS-1123 label, unique
	// in the file.
	Name string `json:"name"`
	// Driver names the registered driver that talks to the service.
	Driver string `json:"driver"`
	// Config is the driver's options, decoded strictly into the driver's own
	// type; its schema is the driver's config.schema.json.
	Config json.RawMessage `json:"config,omitempty"`
	// Defaults are values a naming template reads as ${backend.key}.
	Defaults map[string]string `json:"defaults,omitempty"`
	// NamePolicy restricts the backend resource names tenants can claim.
	NamePolicy *NamePolicy `json:"namePolicy,omitempty"`

	options drivers.Config
	driver  drivers.Driver
}

// NamePolicy restricts resolved backend resource names, so that one tenant
// cannot claim another tenant's topic or bucket name.
type NamePolicy struct {
	// Prefix is a naming template (the spec.name grammar) that every
	// resolved name must start with. The file is environment-substituted,
	// so template references are escaped with $$: "$${namespace}." or
	// "$${backend.zone}-$${namespace}-".
	Prefix string `json:"prefix" envsubst:"true"`
}

// CheckName applies the backend's name policy to a resolved name, with the
// same substitution sources as the name. The error quotes the policy.
func (b *Backend) CheckName(src naming.Source, resolved string) error {
	if b.NamePolicy == nil {
		return nil
	}
	src.BackendName = b.Name
	src.Defaults = b.Defaults
	prefix, err := naming.Resolve(b.NamePolicy.Prefix, src)
	if err != nil {
		return fmt.Errorf("backend %s's name policy (prefix %q) cannot be resolved for this object: %v", b.Name, b.NamePolicy.Prefix, err)
	}
	if !strings.HasPrefix(resolved, prefix) {
		return fmt.Errorf("resolves to %q, but backend %s only allows names starting with %s (here %q), so that tenants cannot claim each other's names", resolved, b.Name, b.NamePolicy.Prefix, prefix)
	}
	return nil
}

// Options controls how the file is loaded.
type Options struct {
	// Registry holds the drivers this binary can use.
	Registry *drivers.Registry
	// WithoutCredentials loads the file for validation only: fields tagged
	// `credential:"true"` are cleared, never substituted, and not required.
	WithoutCredentials bool
	// Lookup resolves ${VAR} in driver options; nil means the process
	// environment.
	Lookup envsubst.LookupFunc
}

// Load reads dir/buckety-controller.yaml with the y-cluster contract and
// decodes each backend's config into its driver's options type.
func Load(dir string, opts Options) (*Config, error) {
	if opts.Registry == nil {
		return nil, fmt.Errorf("config.Load: no driver registry")
	}
	if opts.Lookup == nil {
		opts.Lookup = envsubst.OSEnv
	}
	c := &Config{opts: opts}
	if err := configfile.Load(dir, Filename, c); err != nil {
		return nil, err
	}
	return c, nil
}

// SetDir implements configfile.DirSetter.
func (c *Config) SetDir(abs string) { c.dir = abs }

// Dir is the absolute directory the file was loaded from.
func (c *Config) Dir() string { return c.dir }

// Validate implements configfile.Validator: backend names are unique DNS
// labels, drivers are registered, driver options decode strictly and pass
// the driver's checks, and defaults keys are usable in templates.
func (c *Config) Validate() error {
	var errs field.ErrorList
	root := field.NewPath("backends")
	if len(c.Backends) == 0 {
		errs = append(errs, field.Required(root, "define at least one backend (name, driver, config)"))
	}
	seen := map[string]int{}
	for i := range c.Backends {
		b := &c.Backends[i]
		p := root.Index(i)
		switch {
		case b.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "the name Buckety.spec.backend refers to"))
		default:
			for _, msg := range validation.IsDNS1123Label(b.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), b.Name, msg))
			}
			if j, dup := seen[b.Name]; dup {
				errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also backends[%d].name); backend names must be unique", b.Name, j)))
			}
			seen[b.Name] = i
		}
		if b.NamePolicy != nil {
			if _, err := naming.Parse(b.NamePolicy.Prefix); err != nil || b.NamePolicy.Prefix == "" {
				msg := "a naming template, as ${namespace}."
				if err != nil {
					msg = err.Error()
				}
				errs = append(errs, field.Invalid(p.Child("namePolicy", "prefix"), b.NamePolicy.Prefix, msg))
			}
		}
		for k := range b.Defaults {
			if !naming.ValidBackendKey(k) {
				errs = append(errs, field.Invalid(p.Child("defaults").Key(k), k, "key must be letters, digits, _ and -, starting with a letter or _, so templates can use ${backend."+k+"}"))
			}
		}
		if b.Driver == "" {
			errs = append(errs, field.Required(p.Child("driver"), fmt.Sprintf("one of: %s", c.driverList())))
			continue
		}
		d, ok := c.opts.Registry.Get(b.Driver)
		if !ok {
			errs = append(errs, field.Invalid(p.Child("driver"), b.Driver, fmt.Sprintf("unknown driver; this build has: %s", c.driverList())))
			continue
		}
		b.driver = d
		errs = append(errs, c.decodeOptions(b, p.Child("config"))...)
	}
	if len(errs) > 0 {
		return &ValidationError{Errs: errs}
	}
	return nil
}

func (c *Config) driverList() string {
	if n := c.opts.Registry.Names(); len(n) > 0 {
		return strings.Join(n, ", ")
	}
	return "(no drivers in this build)"
}

// decodeOptions decodes, substitutes and validates one backend's config.
func (c *Config) decodeOptions(b *Backend, p *field.Path) field.ErrorList {
	opts := b.driver.NewConfig()
	raw := b.Config
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := configfile.DecodeStrict(raw, opts); err != nil {
		return field.ErrorList{fromConfigfile(p, err)}
	}
	if ds, ok := opts.(configfile.DirSetter); ok {
		ds.SetDir(c.dir)
	}
	creds := credentialPaths(reflect.TypeOf(opts), "")
	if c.opts.WithoutCredentials {
		clearCredentials(reflect.ValueOf(opts))
	}
	if err := envsubst.Apply(opts, c.opts.Lookup); err != nil {
		if ee, ok := err.(*envsubst.Error); ok {
			return field.ErrorList{field.Invalid(sub(p, ee.Path), field.OmitValueType{}, ee.Msg)}
		}
		return field.ErrorList{field.InternalError(p, err)}
	}
	var errs field.ErrorList
	for _, e := range opts.Validate(p) {
		if c.opts.WithoutCredentials && isCredential(p, e.Field, creds) {
			continue
		}
		errs = append(errs, e)
	}
	b.options = opts
	return errs
}

// sub appends a dotted, bracketed path produced by envsubst or configfile
// to p.
func sub(p *field.Path, rel string) *field.Path {
	if rel == "" {
		return p
	}
	return field.NewPath(p.String() + "." + rel)
}

func fromConfigfile(p *field.Path, err error) *field.Error {
	if ce, ok := err.(*configfile.Error); ok {
		return field.Invalid(sub(p, ce.Path), field.OmitValueType{}, ce.Msg)
	}
	return field.Invalid(p, field.OmitValueType{}, err.Error())
}

// credentialPaths lists the JSON paths of fields tagged credential:"true".
func credentialPaths(t reflect.Type, prefix string) []string {
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
		if f.Tag.Get("credential") == "true" {
			out = append(out, p)
			continue
		}
		out = append(out, credentialPaths(f.Type, p)...)
	}
	return out
}

func isCredential(p *field.Path, errField string, creds []string) bool {
	for _, c := range creds {
		full := p.String() + "." + c
		if errField == full || strings.HasPrefix(errField, full+".") || strings.HasPrefix(errField, full+"[") {
			return true
		}
	}
	return false
}

// clearCredentials zeroes every field tagged credential:"true".
func clearCredentials(v reflect.Value) {
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
		if f.Tag.Get("credential") == "true" {
			v.Field(i).SetZero()
			continue
		}
		clearCredentials(v.Field(i))
	}
}

// ValidationError is every problem Validate found.
type ValidationError struct {
	Errs field.ErrorList
}

func (e *ValidationError) Error() string {
	if len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	lines := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		lines[i] = "  - " + fe.Error()
	}
	return fmt.Sprintf("%d problems:\n%s", len(e.Errs), strings.Join(lines, "\n"))
}

// Backend returns the backend named name.
func (c *Config) Backend(name string) (*Backend, bool) {
	for i := range c.Backends {
		if c.Backends[i].Name == name {
			return &c.Backends[i], true
		}
	}
	return nil, false
}

// BackendNames returns the backend names in file order.
func (c *Config) BackendNames() []string {
	out := make([]string, len(c.Backends))
	for i, b := range c.Backends {
		out[i] = b.Name
	}
	return out
}

// Options returns the backend's decoded, validated driver options.
func (b *Backend) Options() drivers.Config { return b.options }

// DriverImpl returns the backend's driver.
func (b *Backend) DriverImpl() drivers.Driver { return b.driver }
