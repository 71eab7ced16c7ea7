package config

import (
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/kadm"
)

// TestCollideAgainstSearch holds collide to a search over short namespace
// names: every pair of policies under which the search finds a name that
// goes to two namespaces is one collide refuses, and every example
// collide gives is one (its name starts with both prefixes, and its
// namespaces are two namespace names).
func TestCollideAgainstSearch(t *testing.T) {
	skels, namespaces, prefixes := searchSpace()
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

// searchSkels are the policies the searches compare, as skeletons.
var searchSkels = []string{
	"${namespace}.", "${namespace}_", "${namespace}.x.", "${namespace}.eu-", "${namespace}.${namespace}.",
	"eu-${namespace}.", "eu.${namespace}.", "eu_${namespace}.", "e${namespace}.", "u-${namespace}_",
	"x.${namespace}.", "-x.${namespace}.", "eu-x.${namespace}.", "x.eu-${namespace}.",
	"eu-${namespace}.eu-zz.", "eu-${namespace}.zz-", "eu-${namespace}.eu-${namespace}-q.",
}

// searchSpace is what the searches try: searchSkels, the namespaces (every
// namespace name of up to three of "euxzq-", and those behind "eu-" and
// "eu-eu-"), and, by skeleton and namespace, the prefix each gives.
func searchSpace() (skels, namespaces []string, prefixes [][]string) {
	skels = searchSkels
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
	prefixes = make([][]string, len(skels))
	for i, s := range skels {
		for _, n := range namespaces {
			prefixes[i] = append(prefixes[i], newPolicyShape(s).prefix(n))
		}
	}
	return skels, namespaces, prefixes
}

// TestReservedApartAgainstSearch holds reservesUnder, as
// checkPolicyOverlaps uses it, to the search of TestCollideAgainstSearch:
// for every pair of policies collide refuses and every reservation on
// either backend, when the pair is let through for the reservation, every
// name the search finds going to two namespaces (each prefix both give,
// with a few continuations) is reserved on one of the two backends, so at
// most one namespace can claim it. Both outcomes must occur, or the search
// proves nothing.
func TestReservedApartAgainstSearch(t *testing.T) {
	skels, namespaces, prefixes := searchSpace()
	reservations := [][]string{
		{"eu-*"}, {"e*"}, {"eu.*"}, {"eu_*"}, {"x.*"}, {"x.eu-*"}, {"p.eu*"}, {"[de]u-*"}, {"?u-*"},
		{"eu-x*"}, {"eu-*.*"}, {"eu-?*"}, {`eu-\*`}, {"eu-"}, {"eu-x.*", "eu-z*"}, {"*"},
	}
	rests := []string{"", "orders", "x", "-", ".", "_", "q.z", "eu-"}
	var accepted, refused int
	for i := range skels {
		for j := range skels {
			s1, s2 := newPolicyShape(skels[i]), newPolicyShape(skels[j])
			if collide(s1, s2) == nil {
				continue
			}
			under := longerLit(s1, s2)
			for _, r := range reservations {
				for side := range 2 {
					b1, b2 := &Backend{Name: "a", driver: kadm.New()}, &Backend{Name: "b", driver: kadm.New()}
					if side == 0 {
						b1.ReservedNames = r
					} else {
						b2.ReservedNames = r
					}
					if b1.reservesUnder(under, s1) == "" && b2.reservesUnder(under, s2) == "" {
						refused++
						continue
					}
					accepted++
				search:
					for x, a := range namespaces {
						for y, b := range namespaces {
							if a == b || !compatible(prefixes[i][x], prefixes[j][y]) {
								continue
							}
							for _, rest := range rests {
								if name := longer(prefixes[i][x], prefixes[j][y]) + rest; !reservedEither(b1, b2, name) {
									t.Errorf("%s vs %s, reservedNames %q on backend %s: let through, but namespaces %s and %s both get %q", skels[i], skels[j], r, []string{"a", "b"}[side], a, b, name)
									break search
								}
							}
						}
					}
				}
			}
		}
	}
	if accepted == 0 || refused == 0 {
		t.Errorf("want pairs both let through and refused for their reservations, got %d and %d", accepted, refused)
	}
}
