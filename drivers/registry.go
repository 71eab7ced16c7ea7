package drivers

import (
	"fmt"
	"regexp"
	"sort"
)

var (
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	// secretKeyRE: a key every Secret has is also an environment variable
	// name, so that envFrom hands every workload what it needs everywhere.
	secretKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// optionalSecretKeyRE: an optional key may be any Secret data key, e.g.
	// a client library's property name (security.protocol): mounted as a
	// file it keeps its name, and envFrom passes it where the cluster
	// accepts such environment variable names (Kubernetes 1.32 and later by
	// default).
	optionalSecretKeyRE = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// Registry maps driver names to drivers. It is built once at start-up, in
// package drivers/all, and read-only afterwards.
type Registry struct {
	drivers map[string]Driver
}

// NewRegistry returns a registry holding ds. It panics like Register.
func NewRegistry(ds ...Driver) *Registry {
	r := &Registry{drivers: map[string]Driver{}}
	for _, d := range ds {
		r.Register(d)
	}
	return r
}

// Register adds d. A nil driver, a malformed name, a name registered twice
// or a malformed Secret key declaration is a programming error and panics,
// so a binary that wires drivers wrongly never starts.
func (r *Registry) Register(d Driver) {
	if d == nil {
		panic("drivers: Register of a nil driver")
	}
	name := d.Name()
	if !nameRE.MatchString(name) {
		panic(fmt.Sprintf("drivers: driver name %q must be lowercase letters, digits and -", name))
	}
	if err := checkSecretKeys(d.SecretKeys()); err != nil {
		panic(fmt.Sprintf("drivers: driver %q: %v", name, err))
	}
	if err := checkSecretFormats(d.SecretKeys(), Formats(d)); err != nil {
		panic(fmt.Sprintf("drivers: driver %q: %v", name, err))
	}
	if _, dup := r.drivers[name]; dup {
		panic(fmt.Sprintf("drivers: driver %q registered twice", name))
	}
	r.drivers[name] = d
}

// Get returns the driver registered under name.
func (r *Registry) Get(name string) (Driver, bool) {
	d, ok := r.drivers[name]
	return d, ok
}

// Names returns the registered driver names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.drivers))
	for n := range r.drivers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// checkSecretKeys: at least one key that every Secret has, every required
// name an environment variable name and every optional one a Secret data
// key, each declared once, every key described.
func checkSecretKeys(keys []SecretKey) error {
	// A per-resource key and a plain key may share a name: topic.<key>
	// of several beside the topic of one.
	type declared struct {
		name        string
		perResource bool
	}
	seen := map[declared]bool{}
	for _, k := range keys {
		d := declared{k.Name, k.PerResource}
		switch {
		case !k.Optional && !secretKeyRE.MatchString(k.Name):
			return fmt.Errorf("secret key %q must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*): every Secret has it", k.Name)
		case k.Optional && !optionalSecretKeyRE.MatchString(k.Name):
			return fmt.Errorf("optional secret key %q must be a Secret data key ([-._a-zA-Z0-9]+)", k.Name)
		case seen[d]:
			return fmt.Errorf("secret key %q declared twice", k.Name)
		case k.Description == "":
			return fmt.Errorf("secret key %q has no description", k.Name)
		case k.PerResource && !k.Optional:
			return fmt.Errorf("secret key %q is per resource, so not in every Secret: it must be optional", k.Name)
		}
		seen[d] = true
	}
	if len(RequiredSecretKeys(keys)) == 0 {
		return fmt.Errorf("declares no secret key that every Secret has")
	}
	return nil
}
