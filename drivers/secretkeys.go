package drivers

import (
	"fmt"
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
	declared := map[string]bool{}
	var problems []string
	for _, k := range keys {
		declared[k.Name] = true
		if !k.Optional && len(data[k.Name]) == 0 {
			problems = append(problems, fmt.Sprintf("required key %q missing or empty", k.Name))
		}
	}
	var extra []string
	for name := range data {
		if !declared[name] {
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
