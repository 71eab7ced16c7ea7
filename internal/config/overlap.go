package config

import (
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/internal/naming"
)

// nsRef is ${namespace} as a skeleton (naming.Template.Skeleton) keeps it.
const nsRef = "${namespace}"

// policyShape is a name policy that passed checkPolicy, as its skeleton:
// backend defaults resolved, ${namespace} kept. lit is the literal text
// before the first ${namespace}, which checkPolicy guarantees is followed
// by a byte no namespace name can hold.
type policyShape struct {
	skel, lit string
}

func newPolicyShape(skel string) policyShape {
	return policyShape{skel: skel, lit: skel[:strings.Index(skel, nsRef)]}
}

// prefix is the prefix the policy gives namespace ns.
func (s policyShape) prefix(ns string) string {
	return strings.ReplaceAll(s.skel, nsRef, ns)
}

// policyCollision is a name that two policies give to two different
// namespaces: name starts with the prefix the first policy gives namespace
// a and with the one the second gives namespace b. unproven is set, with
// no example, when the check could neither find such a name nor show that
// there is none: it is a security check, so the pair is refused all the
// same.
type policyCollision struct {
	a, b, name string
	unproven   bool
}

// collide looks for a name that policies s1 and s2, on one service, give
// to two different namespaces; nil when there is none.
//
// A namespace name is a DNS-1123 label and the first ${namespace} of each
// policy is followed by a byte outside its alphabet, so under one policy
// the namespace a name belongs to is the maximal run of that alphabet
// where the policy's literal text ends. With the same literal text both
// policies therefore read the same namespace out of any name, and with
// texts that differ at a position both have no name starts with both.
// Only when one text is a proper prefix of the other can the shorter
// policy's namespace start inside the longer one's literal text.
func collide(s1, s2 policyShape) *policyCollision {
	if s1.lit == s2.lit {
		return nil
	}
	short, long, swapped := s1, s2, false
	if len(short.lit) > len(long.lit) {
		short, long, swapped = s2, s1, true
	}
	if !strings.HasPrefix(long.lit, short.lit) {
		return nil
	}
	c := collideNested(short, long)
	if c != nil && swapped {
		c.a, c.b = c.b, c.a
	}
	return c
}

// collideNested is collide where short.lit is a proper prefix of
// long.lit: the namespace a of short starts at the text d that long.lit
// has beyond short.lit.
func collideNested(short, long policyShape) *policyCollision {
	d := long.lit[len(short.lit):]
	k := strings.IndexFunc(d, func(r rune) bool { return !inNamespaceAlphabet(r) })
	switch {
	case k == 0:
		// a would be empty.
		return nil
	case k > 0:
		// a ends where d leaves the alphabet, so it is d[:k] and the
		// whole prefix short gives is known; b is then read out of it.
		a := d[:k]
		if !isNamespace(a) {
			return nil
		}
		pa := short.prefix(a)
		b, ok := namespaceUnder(long, pa, a)
		if !ok {
			return nil
		}
		return &policyCollision{a: a, b: b, name: longer(pa, long.prefix(b)) + "orders"}
	}
	// d is all alphabet: a runs on past d through b, up to the byte that
	// follows b under long, so a is d followed by b, whatever b is.
	if !isNamespace(d + "x") {
		// d cannot start a namespace name, or leaves no room for b.
		return nil
	}
	for _, b := range candidates(short, long) {
		a := d + b
		if !isNamespace(b) || !isNamespace(a) {
			continue
		}
		pa, pb := short.prefix(a), long.prefix(b)
		if compatible(pa, pb) {
			return &policyCollision{a: a, b: b, name: longer(pa, pb) + "orders"}
		}
	}
	// No example: the policies are apart when the text each prefix has
	// for certain, whatever b is, differs somewhere.
	restA, restB := short.skel[len(short.lit)+len(nsRef):], long.skel[len(long.lit)+len(nsRef):]
	knownA, knownB := restA, restB
	if i := strings.Index(restA, nsRef); i >= 0 {
		knownA = restA[:i] + d
	}
	if i := strings.Index(restB, nsRef); i >= 0 {
		knownB = restB[:i]
	}
	if !compatible(knownA, knownB) {
		return nil
	}
	return &policyCollision{unproven: true}
}

// namespaceUnder finds a namespace other than a to which long gives a
// prefix that pa starts, or that starts pa.
func namespaceUnder(long policyShape, pa, a string) (string, bool) {
	if !compatible(pa, long.lit) {
		return "", false
	}
	if len(pa) <= len(long.lit) {
		// pa ends before long's namespace: any namespace will do.
		if a == "x" {
			return "y", true
		}
		return "x", true
	}
	rest := pa[len(long.lit):]
	run := strings.IndexFunc(rest, func(r rune) bool { return !inNamespaceAlphabet(r) })
	if run >= 0 {
		// pa holds all of b, and so the rest of long's prefix.
		b := rest[:run]
		if b == a || !isNamespace(b) {
			return "", false
		}
		return b, compatible(pa, long.prefix(b))
	}
	// pa ends inside b: any namespace that starts with rest.
	for _, b := range []string{rest, rest + "x", rest + "y"} {
		if b != a && isNamespace(b) {
			return b, true
		}
	}
	return "", false
}

// candidates are the namespaces collideNested tries as b: a plain one,
// and every label within the literal text of either policy, for policies
// whose later ${namespace} must meet that text.
func candidates(policies ...policyShape) []string {
	out := []string{"x"}
	seen := map[string]bool{"x": true}
	for _, p := range policies {
		for _, lit := range strings.Split(p.skel, nsRef) {
			for _, run := range strings.FieldsFunc(lit, func(r rune) bool { return !inNamespaceAlphabet(r) }) {
				for i := range run {
					for j := i + 1; j <= len(run); j++ {
						if s := run[i:j]; !seen[s] && isNamespace(s) {
							seen[s] = true
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	return out
}

func inNamespaceAlphabet(r rune) bool { return strings.ContainsRune(namespaceAlphabet, r) }

func isNamespace(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

// compatible reports whether some name starts with both u and v.
func compatible(u, v string) bool { return strings.HasPrefix(u, v) || strings.HasPrefix(v, u) }

func longer(u, v string) string {
	if len(u) >= len(v) {
		return u
	}
	return v
}

// checkPolicyOverlaps refuses two backends of one service (claims are
// keyed by service and name) whose name policies give one name to two
// namespaces: through the one backend a tenant could claim a name the
// other backend's policy reserves for another namespace. checkPolicy
// cannot see this, as each policy alone keeps tenants apart. checked lists,
// by index, the backends whose policy passed checkPolicy; the others are
// reported already, or (loaded without the environment) left to the
// controller.
func (c *Config) checkPolicyOverlaps(root *field.Path, checked []bool) field.ErrorList {
	var errs field.ErrorList
	shapes := make([]*policyShape, len(c.Backends))
	for i := range c.Backends {
		if !checked[i] {
			continue
		}
		b := &c.Backends[i]
		t, err := naming.Parse(b.NamePolicy.Prefix)
		if err != nil {
			continue
		}
		if skel, err := t.Skeleton(b.Name, b.Defaults); err == nil && strings.Contains(skel, nsRef) {
			s := newPolicyShape(skel)
			shapes[i] = &s
		}
	}
	for j := range c.Backends {
		bj := &c.Backends[j]
		if shapes[j] == nil {
			continue
		}
		for i := 0; i < j; i++ {
			bi := &c.Backends[i]
			if shapes[i] == nil || bi.ClaimScope() != bj.ClaimScope() {
				continue
			}
			col := collide(*shapes[i], *shapes[j])
			if col == nil {
				continue
			}
			short, long := bi, bj
			if len(shapes[i].lit) > len(shapes[j].lit) {
				short, long = bj, bi
			}
			under := longerLit(*shapes[i], *shapes[j])
			if bi.reservesUnder(under, *shapes[i]) != "" || bj.reservesUnder(under, *shapes[j]) != "" {
				continue
			}
			fix := fmt.Sprintf(`write the same text before $${namespace} in both (as "$${namespace}." and "$${namespace}_"), or texts that differ at a character both have (as "a.$${namespace}." and "b.$${namespace}."); or, if backend %s need not serve the namespaces whose names under it would start with %q, reserve all those names on it, as reservedNames: [%q] (a reservation that leaves any name starting so unreserved does not do)`, short.Name, under, globQuote(under)+"*")
			other := fmt.Sprintf("backends[%d].namePolicy.prefix (%s)", i, describePolicy(bi, *shapes[i]))
			var msg string
			switch {
			case col.unproven:
				msg = fmt.Sprintf("may overlap %s on service %s, where the two backends share one claim space: the prefixes continue alike up to a second ${namespace}, and the check cannot show that no name goes to two namespaces; %s", other, bj.ClaimScope(), fix)
			case reservedEither(bi, bj, col.name):
				// The example is reserved, but not every name that
				// goes to two namespaces is.
				msg = fmt.Sprintf("overlaps %s on service %s, where the two backends share one claim space: names starting with %q can go to one namespace through backend %s and to another through backend %s, and the reservedNames of neither backend reserve them all; %s", other, bj.ClaimScope(), under, short.Name, long.Name, fix)
			default:
				msg = fmt.Sprintf("overlaps %s on service %s, where the two backends share one claim space: namespace %s may claim %q through backend %s, and namespace %s through backend %s; %s", other, bj.ClaimScope(), col.a, col.name, bi.Name, col.b, bj.Name, fix)
			}
			errs = append(errs, field.Invalid(root.Index(j).Child("namePolicy", "prefix"), bj.NamePolicy.Prefix, msg))
		}
	}
	return errs
}

// longerLit is the longer literal text before ${namespace} of two
// policies collide found overlapping. Every name the two give to two
// namespaces starts with it: it starts with a prefix the longer policy
// gives, and every such prefix starts with its literal text.
func longerLit(s1, s2 policyShape) string {
	if len(s1.lit) >= len(s2.lit) {
		return s1.lit
	}
	return s2.lit
}

// reservesUnder returns a pattern of b's reserved names (Reserved) that
// matches every name starting with lit, "" when none does; then no name
// starting with lit is b's to give, and two policies whose overlap is all
// under lit (longerLit) overlap on no name a tenant can claim through b.
// A pattern does when it is a glob q followed by a final *, and q matches
// lit or a start of it: the * matches the rest, which path.Match allows
// for any rest without a "/". So b's driver must refuse names holding a
// "/", as Kafka topic and S3 bucket names cannot hold one: a name under
// b's policy (own) that the driver takes, and no longer takes with a "/"
// in it, says so. A driver that takes such names gets no help from
// reservedNames.
func (b *Backend) reservesUnder(lit string, own policyShape) string {
	if b.driver == nil || strings.Contains(lit, "/") {
		return ""
	}
	name := field.NewPath("name")
	if _, errs := b.driver.ValidateName(name, b.options, own.prefix("team")+"orders"); len(errs) > 0 {
		return ""
	}
	if _, errs := b.driver.ValidateName(name, b.options, own.prefix("team")+"or/ders"); len(errs) == 0 {
		return ""
	}
	for _, p := range b.reservedPatterns() {
		q, ok := strings.CutSuffix(p, "*")
		if !ok || escapedEnd(q) {
			continue
		}
		for n := 0; n <= len(lit); n++ {
			if ok, err := path.Match(q, lit[:n]); err == nil && ok {
				return p
			}
		}
	}
	return ""
}

// escapedEnd reports whether the glob q ends with an unescaped
// backslash, which makes a * that follows it a literal *.
func escapedEnd(q string) bool {
	n := len(q) - len(strings.TrimRight(q, `\`))
	return n%2 == 1
}

// globQuote is s as a glob matching s alone.
func globQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// reservedEither reports whether bi or bj reserves name.
func reservedEither(bi, bj *Backend, name string) bool {
	_, ri := bi.Reserved(name)
	_, rj := bj.Reserved(name)
	return ri || rj
}

// describePolicy quotes b's prefix, and what it is with the backend's
// defaults when it reads them.
func describePolicy(b *Backend, s policyShape) string {
	if s.skel == b.NamePolicy.Prefix {
		return fmt.Sprintf("%q", b.NamePolicy.Prefix)
	}
	return fmt.Sprintf("%q, here %q", b.NamePolicy.Prefix, s.skel)
}

// policyNotice is the line Notices logs for backend i when it has no name
// policy but shares its service with a backend that has one, "" otherwise:
// its tenants can claim any name on the service, those the policy gives to
// other namespaces included. That is a common setup (the backend without a
// policy serves trusted namespaces), so the file is not refused, but the
// maintainer should know.
func (c *Config) policyNotice(i int) string {
	b := &c.Backends[i]
	if b.NamePolicy != nil {
		return ""
	}
	var with []string
	for j := range c.Backends {
		if o := &c.Backends[j]; j != i && o.NamePolicy != nil && o.ClaimScope() == b.ClaimScope() {
			with = append(with, o.Name)
		}
	}
	if len(with) == 0 {
		return ""
	}
	has := "which has one"
	if len(with) > 1 {
		has = "which have one"
	}
	return fmt.Sprintf("backend %s: has no namePolicy, but shares service %s with %s, %s: every namespace that may create Bucketies on %s can claim any name on the service, those a policy gives to other namespaces included; give %s a namePolicy, unless only trusted namespaces use it", b.Name, b.ClaimScope(), strings.Join(with, ", "), has, b.Name, b.Name)
}
