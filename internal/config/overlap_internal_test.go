package config

import (
	"strings"
	"testing"
)

// TestCollideAgainstSearch holds collide to a search over short namespace
// names: every pair of policies under which the search finds a name that
// goes to two namespaces is one collide refuses, and every example
// collide gives is one (its name starts with both prefixes, and its
// namespaces are two namespace names).
func TestCollideAgainstSearch(t *testing.T) {
	skels := []string{
		"${namespace}.", "${namespace}_", "${namespace}.x.", "${namespace}.eu-", "${namespace}.${namespace}.",
		"eu-${namespace}.", "eu.${namespace}.", "eu_${namespace}.", "e${namespace}.", "u-${namespace}_",
		"x.${namespace}.", "-x.${namespace}.", "eu-x.${namespace}.", "x.eu-${namespace}.",
		"eu-${namespace}.eu-zz.", "eu-${namespace}.zz-", "eu-${namespace}.eu-${namespace}-q.",
	}
	var namespaces []string
	var grow func(s string)
	grow = func(s string) {
		if isNamespace(s) {
			namespaces = append(namespaces, s)
		}
		if len(s) == 3 {
			return
		}
		for _, r := range "euxzq-" {
			grow(s + string(r))
		}
	}
	grow("")
	for _, n := range append([]string(nil), namespaces...) {
		namespaces = append(namespaces, "eu-"+n, "eu-eu-"+n)
	}
	prefixes := make([][]string, len(skels))
	for i, s := range skels {
		for _, n := range namespaces {
			prefixes[i] = append(prefixes[i], newPolicyShape(s).prefix(n))
		}
	}
	for i := range skels {
		for j := range skels {
			s1, s2 := newPolicyShape(skels[i]), newPolicyShape(skels[j])
			got := collide(s1, s2)
			if got != nil && !got.unproven {
				if got.a == got.b || !isNamespace(got.a) || !isNamespace(got.b) ||
					!strings.HasPrefix(got.name, s1.prefix(got.a)) || !strings.HasPrefix(got.name, s2.prefix(got.b)) {
					t.Errorf("%s vs %s: the example %+v is none", skels[i], skels[j], *got)
				}
			}
			if got != nil {
				continue
			}
		search:
			for x, a := range namespaces {
				for y, b := range namespaces {
					if a != b && compatible(prefixes[i][x], prefixes[j][y]) {
						t.Errorf("%s vs %s: let through, but namespaces %s and %s both get names starting %q", skels[i], skels[j], a, b, longer(prefixes[i][x], prefixes[j][y]))
						break search
					}
				}
			}
		}
	}
}
