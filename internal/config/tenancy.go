package config

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/naming"
)

// AllowsAdoption reports whether the maintainer allows adoption on b.
func (b *Backend) AllowsAdoption() bool { return b.Adoption != nil && b.Adoption.Allow }

// DeletesAdopted reports whether retentionPolicy Delete may delete an
// adopted resource on b.
func (b *Backend) DeletesAdopted() bool { return b.Adoption != nil && b.Adoption.DeleteAdopted }

// ClaimScope is the service name claims on b's resources are keyed by:
// Service, or the backend's own name.
func (b *Backend) ClaimScope() string {
	if b.Service != "" {
		return b.Service
	}
	return b.Name
}

// ScopeMembers lists, in file order, the names of every backend whose
// claims share scope (ClaimScope).
func (c *Config) ScopeMembers(scope string) []string {
	var out []string
	for i := range c.Backends {
		if c.Backends[i].ClaimScope() == scope {
			out = append(out, c.Backends[i].Name)
		}
	}
	return out
}

// Reserved reports the pattern (the driver's or the backend's
// reservedNames) a resolved name matches, if any.
func (b *Backend) Reserved(name string) (pattern string, reserved bool) {
	var patterns []string
	if r, ok := b.driver.(drivers.NameReserver); ok {
		patterns = append(patterns, r.ReservedNames()...)
	}
	for _, p := range append(patterns, b.ReservedNames...) {
		if ok, err := path.Match(p, name); err == nil && ok {
			return p, true
		}
	}
	return "", false
}

// CheckParameterLimits applies limits.parameterMax to spec.parameters;
// errors name the key under fldPath.
func (b *Backend) CheckParameterLimits(fldPath *field.Path, params map[string]string) field.ErrorList {
	if b.Limits == nil {
		return nil
	}
	var errs field.ErrorList
	keys := make([]string, 0, len(b.Limits.ParameterMax))
	for k := range b.Limits.ParameterMax {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := params[k]
		if !ok {
			continue
		}
		limit := b.Limits.ParameterMax[k]
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > limit {
			errs = append(errs, field.Invalid(fldPath.Key(k), v, fmt.Sprintf("backend %s allows at most %d (limits.parameterMax.%s in buckety-controller.yaml)", b.Name, limit, k)))
		}
	}
	return errs
}

// CheckName applies the backend's reserved names and its name policy to a
// resolved name, with the same substitution sources as the name. The error
// quotes the pattern or the policy.
func (b *Backend) CheckName(src naming.Source, resolved string) error {
	if p, ok := b.Reserved(resolved); ok {
		return fmt.Errorf("resolves to %q, which backend %s reserves (%q): it belongs to the service itself or to another system; choose another spec.name", resolved, b.Name, p)
	}
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

// checkServices refuses backends that reach one service through two claim
// spaces (see Backend.Service), and a claim space shared by two drivers.
func (c *Config) checkServices(root *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j := range c.Backends {
		bj := &c.Backends[j]
		if bj.driver == nil || bj.options == nil {
			continue
		}
		for i := 0; i < j; i++ {
			bi := &c.Backends[i]
			if bi.driver == nil || bi.options == nil {
				continue
			}
			if bi.ClaimScope() == bj.ClaimScope() {
				if bi.Driver != bj.Driver {
					errs = append(errs, field.Invalid(root.Index(j).Child("service"), bj.ClaimScope(), fmt.Sprintf("is also the service of backends[%d] (%s), whose driver is %s, not %s: one service is reached through one driver", i, bi.Name, bi.Driver, bj.Driver)))
				}
				continue
			}
			if bi.Driver != bj.Driver {
				continue
			}
			if shared := sharedAddress(bi.options, bj.options); shared != "" {
				errs = append(errs, field.Invalid(root.Index(j).Child("service"), bj.Service, fmt.Sprintf("backends[%d] (%s) and backends[%d] (%s) reach the same service (%s) in two claim spaces, so one resource could get an owner through each; give both the same service, as `service: %s`", i, bi.Name, j, bj.Name, shared, bi.ClaimScope())))
			}
		}
	}
	return errs
}

// sharedAddress returns an address two backends' options both reach, as
// their driver reports them (drivers.ServiceAddresser), or "".
func sharedAddress(a, b drivers.Config) string {
	sa, ok1 := a.(drivers.ServiceAddresser)
	sb, ok2 := b.(drivers.ServiceAddresser)
	if !ok1 || !ok2 {
		return ""
	}
	seen := map[string]bool{}
	for _, x := range sa.ServiceAddresses() {
		seen[x] = true
	}
	for _, x := range sb.ServiceAddresses() {
		if seen[x] {
			return x
		}
	}
	return ""
}
