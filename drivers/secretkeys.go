package drivers

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// SecretKey is one key of the Secret a driver's Grant returns. Each driver
// declares its keys once (Driver.SecretKeys); the release tool publishes
// them as the driver's secret schema, and the grant tests, the e2e
// assertions, the probe and README are read from or checked against that
// declaration.
type SecretKey struct {
	// Name is the flat key: an environment variable name for a key every
	// Secret has; any Secret data key for an optional one.
	Name string
	// Description says what the value is; for an optional key, also when
	// the Secret has it.
	Description string
	// Optional is true for a key only some Secrets have; every Secret has
	// every other key.
	Optional bool
	// Formats names the secret formats that add the key (SecretFormat),
	// empty for a default key.
	Formats []string
	// PerResource marks a key of the several-resource shape that the
	// Secret of an access naming several Bucketies holds once per
	// resource, as Name.<key> (SeveralKey, AccessResource.Key); Name
	// alone is then not a key. Always Optional.
	PerResource bool
}

// IsKey reports whether name is one of k's keys: k.Name, or for a
// PerResource key, k.Name, a dot and a resource's key.
func (k SecretKey) IsKey(name string) bool {
	if !k.PerResource {
		return name == k.Name
	}
	rest, ok := strings.CutPrefix(name, k.Name+".")
	return ok && rest != "" && optionalSecretKeyRE.MatchString(rest)
}

// RequiredSecretKeys returns the names of the keys every Secret has, in
// declaration order.
func RequiredSecretKeys(keys []SecretKey) []string {
	var out []string
	for _, k := range keys {
		if !k.Optional {
			out = append(out, k.Name)
		}
	}
	return out
}

// CheckSecretData checks a Grant's payload against the declared keys: every
// required key is present and non-empty, and no key is undeclared. The
// error names every key that is missing or extra.
func CheckSecretData(keys []SecretKey, data map[string][]byte) error {
	var problems []string
	for _, k := range keys {
		if !k.Optional && len(data[k.Name]) == 0 {
			problems = append(problems, fmt.Sprintf("required key %q missing or empty", k.Name))
		}
	}
	var extra []string
	for name := range data {
		if !slices.ContainsFunc(keys, func(k SecretKey) bool { return k.IsKey(name) }) {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		problems = append(problems, fmt.Sprintf("key %q is not declared", name))
	}
	if len(problems) > 0 {
		return fmt.Errorf("secret keys: %s", strings.Join(problems, "; "))
	}
	return nil
}
