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
	// Adoption is the maintainer's key for taking over resources that
	// already exist with content; absent means adoption is not allowed.
	Adoption *Adoption `json:"adoption,omitempty"`

	options drivers.Config
	driver  drivers.Driver
	// policyUnresolved is set when the file is loaded without the
	// environment and namePolicy.prefix references a variable.
	policyUnresolved bool
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

// Adoption is the maintainer's half of the two-key opt-in to adopting
// existing resources that hold content: the tenant's half is
// Buckety.spec.adoption. Allow it only together with a namePolicy, so that a
// tenant can adopt only names under its own prefix.
type Adoption struct {
	// Allow lets Bucketies on this backend set spec.adoption (Adopt or
	// AdoptAndConverge) and take over an existing resource with content.
	Allow bool `json:"allow"`
	// DeleteAdopted lets retentionPolicy Delete delete a resource whose
	// adoption settled (claim phase Adopted), content and all. Default
	// false: an adopted resource is always retained.
	DeleteAdopted bool `json:"deleteAdopted,omitempty"`
}

// AllowsAdoption reports whether the maintainer allows adoption on b.
func (b *Backend) AllowsAdoption() bool { return b.Adoption != nil && b.Adoption.Allow }

// DeletesAdopted reports whether retentionPolicy Delete may delete an
// adopted resource on b.
func (b *Backend) DeletesAdopted() bool { return b.Adoption != nil && b.Adoption.DeleteAdopted }

// CheckName applies the backend's name policy to a resolved name, with the
// same substitution sources as the name. The error quotes the policy.
func (b *Backend) CheckName(src naming.Source, resolved string) error {
	if b.NamePolicy == nil || b.policyUnresolved {
		// Unresolved: the webhook cannot know the prefix; the controller,
		// which has the environment, enforces it.
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

// namespaceAlphabet is every byte a namespace name (a DNS-1123 label) can
// hold.
const namespaceAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789-"

// separators are the bytes checkPolicy suggests after ${namespace}, in order
// of preference: none can occur in a namespace name.
var separators = []string{".", "_"}

// checkPolicy rejects a name policy that does not keep tenants apart: one
// that references a source the tenant controls (${name}, ${label[...]}),
// that does not reference ${namespace}, or under which one namespace's
// prefix can be the start of another's ("${namespace}-": namespace team
// could claim team-x-orders, the natural name of namespace team-x). It is
// unambiguous when the first ${namespace} is directly followed by a byte
// that cannot occur in a namespace name, and that byte is one the driver
// accepts in names.
func (b *Backend) checkPolicy() error {
	t, err := naming.Parse(b.NamePolicy.Prefix)
	if err != nil {
		return err
	}
	hasNamespace := false
	for _, r := range t.Refs() {
		switch r.Kind {
		case naming.Name:
			return fmt.Errorf("references ${name}, which the tenant chooses, so it separates no one; use $${namespace} followed by a separator, as %s", b.suggestion())
		case naming.Label:
			return fmt.Errorf("references %s, which the tenant controls (labels are set by whoever writes the Buckety), so any tenant could take another's prefix; use $${namespace} followed by a separator, as %s", r.String(), b.suggestion())
		case naming.Namespace:
			hasNamespace = true
		}
	}
	if !hasNamespace {
		return fmt.Errorf("does not reference ${namespace}, so every namespace gets the same prefix and tenants can claim each other's names; write, for example, %s", b.suggestion())
	}
	skel, err := t.Skeleton(b.Name, b.Defaults)
	if err != nil {
		return err
	}
	const ns = "${namespace}"
	rest := skel[strings.Index(skel, ns)+len(ns):]
	if rest == "" || strings.ContainsRune(namespaceAlphabet, rune(rest[0])) {
		next := "nothing"
		if rest != "" {
			next = fmt.Sprintf("%q", rest[:1])
		}
		return fmt.Errorf("is ambiguous: ${namespace} is followed by %s, which a namespace name can also continue with, so namespace team could claim team-x-orders, the natural name of namespace team-x; follow ${namespace} with a character a namespace name cannot hold, as %s", next, b.suggestion())
	}
	if _, errs := b.driver.ValidateName(field.NewPath("name"), b.options, b.samplePrefix(skel)+"orders"); len(errs) > 0 {
		return fmt.Errorf("no name under it is valid for driver %s (%s, for a name like %q); use a separator the driver accepts, as %s", b.Driver, errs.ToAggregate().Error(), b.samplePrefix(skel)+"orders", b.suggestion())
	}
	return nil
}

// samplePrefix resolves a skeleton for namespace team.
func (b *Backend) samplePrefix(skel string) string {
	return strings.ReplaceAll(skel, "${namespace}", "team")
}

// suggestion is an unambiguous policy this backend's driver accepts, in the
// file's escaped syntax.
func (b *Backend) suggestion() string {
	for _, sep := range separators {
		if b.driver == nil {
			break
		}
		if _, errs := b.driver.ValidateName(field.NewPath("name"), b.options, "team"+sep+"orders"); len(errs) == 0 {
			return fmt.Sprintf("\"$${namespace}%s\" (a %q cannot occur in a namespace name)", sep, sep)
		}
	}
	return "\"$${namespace}.\" (a \".\" cannot occur in a namespace name), if the driver's names allow it"
}

// Options controls how the file is loaded.
type Options struct {
	// Registry holds the drivers this binary can use.
	Registry *drivers.Registry
	// WithoutCredentials loads the file for validation only, as the
	// admission webhook does: it runs with no environment and none of the
	// controller's mounted files, and must load every file the controller
	// accepts. Fields tagged `credential:"true"` are cleared and not
	// required; no variable is substituted: a tagged field referencing one
	// (${VAR} or ${VAR:-default}) is cleared and the checks of its value are
	// skipped; fields tagged `file:"true"` (paths of files mounted into the
	// controller, such as caFile) are cleared and never read. Everything
	// else is validated as for the controller: backend and driver names,
	// defaults, the name policy, the implementation discriminator and every
	// literal option value. Lookup is not used.
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

// Substitute implements configfile.Substituter: the file's own tagged
// fields (namePolicy.prefix) are substituted with Options.Lookup, or
// neutralised when the file is loaded without the environment. Each
// backend's config block is substituted when it is decoded, in Validate.
func (c *Config) Substitute() error {
	if !c.opts.WithoutCredentials {
		return envsubst.Apply(c, c.opts.Lookup)
	}
	unresolved, err := envsubst.Neutralize(c)
	if err != nil {
		return err
	}
	for _, path := range unresolved {
		for i := range c.Backends {
			if path == fmt.Sprintf("backends[%d].namePolicy.prefix", i) {
				c.Backends[i].policyUnresolved = true
			}
		}
	}
	return nil
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
		policyOK := true
		if b.NamePolicy != nil && !b.policyUnresolved {
			if _, err := naming.Parse(b.NamePolicy.Prefix); err != nil || b.NamePolicy.Prefix == "" {
				msg := "a naming template, as ${namespace}."
				if err != nil {
					msg = err.Error()
				}
				errs = append(errs, field.Invalid(p.Child("namePolicy", "prefix"), b.NamePolicy.Prefix, msg))
				policyOK = false
			}
		}
		if a := b.Adoption; a != nil && a.DeleteAdopted && !a.Allow {
			errs = append(errs, field.Invalid(p.Child("adoption", "deleteAdopted"), true, "applies only to adopted resources; set adoption.allow: true as well, or remove deleteAdopted"))
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
		optErrs := c.decodeOptions(b, p.Child("config"))
		errs = append(errs, optErrs...)
		if b.NamePolicy != nil && !b.policyUnresolved && policyOK && len(optErrs) == 0 {
			if err := b.checkPolicy(); err != nil {
				errs = append(errs, field.Invalid(p.Child("namePolicy", "prefix"), b.NamePolicy.Prefix, err.Error()))
			}
		}
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
	// Paths (relative to the config block) whose checks are skipped when
	// the file is loaded without the controller's environment and files.
	var skip []string
	var err error
	if c.opts.WithoutCredentials {
		skip = append(taggedPaths(reflect.TypeOf(opts), "", "credential"), taggedPaths(reflect.TypeOf(opts), "", "file")...)
		clearTagged(reflect.ValueOf(opts), "credential")
		clearTagged(reflect.ValueOf(opts), "file")
		var unresolved []string
		unresolved, err = envsubst.Neutralize(opts)
		skip = append(skip, unresolved...)
	} else {
		err = envsubst.Apply(opts, c.opts.Lookup)
	}
	if err != nil {
		if ee, ok := err.(*envsubst.Error); ok {
			return field.ErrorList{field.Invalid(sub(p, ee.Path), field.OmitValueType{}, ee.Msg)}
		}
		return field.ErrorList{field.InternalError(p, err)}
	}
	var errs field.ErrorList
	for _, e := range opts.Validate(p) {
		if under(p, e.Field, skip) {
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
