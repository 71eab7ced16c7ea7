package config

import (
	"fmt"
	"maps"
	"path"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
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
// reservedNames) a resolved name matches, if any. Where the driver folds
// names the service takes for the same (drivers.NameFolder: Kafka's '.'
// and '_'), a pattern also reserves the names whose fold its fold
// matches: ".schemas" would collide with "_schemas".
func (b *Backend) Reserved(name string) (pattern string, reserved bool) {
	return b.reserved(name, true)
}

// reserved is Reserved, with the driver's folding when fold is set.
func (b *Backend) reserved(name string, fold bool) (pattern string, reserved bool) {
	f, folds := b.driver.(drivers.NameFolder)
	folds = folds && fold
	for _, p := range b.reservedPatterns() {
		if ok, err := path.Match(p, name); err == nil && ok {
			return p, true
		}
		if folds {
			if ok, err := path.Match(f.FoldName(p), f.FoldName(name)); err == nil && ok {
				return p, true
			}
		}
	}
	return "", false
}

// reservedPatterns are the globs Reserved matches: the driver's, then the
// backend's reservedNames.
func (b *Backend) reservedPatterns() []string {
	var patterns []string
	if r, ok := b.driver.(drivers.NameReserver); ok {
		patterns = append(patterns, r.ReservedNames()...)
	}
	return append(patterns, b.ReservedNames...)
}

// CheckParameterLimits applies limits.parameterMax, limits.parameterMin
// and limits.deniedParameters to a tenant's spec.parameters; errors name
// the key under fldPath, the value, the bound and the config key.
func (b *Backend) CheckParameterLimits(fldPath *field.Path, params map[string]string) field.ErrorList {
	if b.Limits == nil {
		return nil
	}
	errs := b.checkBounds(fldPath, params)
	keys := sortedKeys(params)
	for _, k := range keys {
		if pat, ok := b.Denied(k); ok {
			errs = append(errs, field.Forbidden(fldPath.Key(k), fmt.Sprintf("backend %s does not let tenants set it (limits.deniedParameters: %q in buckety-controller.yaml); remove it, or ask the cluster maintainer", b.Name, pat)))
		}
	}
	return errs
}

// Denied reports the pattern of limits.deniedParameters key matches.
func (b *Backend) Denied(key string) (pattern string, denied bool) {
	if b.Limits == nil {
		return "", false
	}
	for _, p := range b.Limits.DeniedParameters {
		if ok, err := path.Match(p, key); err == nil && ok {
			return p, true
		}
	}
	return "", false
}

// checkBounds applies parameterMax and parameterMin.
func (b *Backend) checkBounds(fldPath *field.Path, params map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(params) {
		max, hasMax := b.Limits.ParameterMax[k]
		min, hasMin := b.Limits.ParameterMin[k]
		if !hasMax && !hasMin {
			continue
		}
		v := params[k]
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil && hasMax:
			errs = append(errs, field.Invalid(fldPath.Key(k), v, fmt.Sprintf("backend %s allows at most %d (limits.parameterMax.%s in buckety-controller.yaml): an integer", b.Name, max, k)))
		case err != nil:
			errs = append(errs, field.Invalid(fldPath.Key(k), v, fmt.Sprintf("backend %s allows at least %d (limits.parameterMin.%s in buckety-controller.yaml): an integer", b.Name, min, k)))
		case hasMax && n < 0:
			// Kafka's -1 (retention.ms, retention.bytes: unlimited):
			// above any ceiling, not below it.
			errs = append(errs, field.Invalid(fldPath.Key(k), v, fmt.Sprintf("backend %s allows at most %d (limits.parameterMax.%s in buckety-controller.yaml), and a negative value means unlimited", b.Name, max, k)))
		case hasMax && n > max:
			errs = append(errs, field.Invalid(fldPath.Key(k), v, fmt.Sprintf("backend %s allows at most %d (limits.parameterMax.%s in buckety-controller.yaml)", b.Name, max, k)))
		case hasMin && n < 0:
			// Unlimited is above a floor: a floor keeps values that load
			// the shared service (a retention of seconds) out.
		case hasMin && n < min:
			errs = append(errs, field.Invalid(fldPath.Key(k), v, fmt.Sprintf("backend %s allows at least %d (limits.parameterMin.%s in buckety-controller.yaml), so that no tenant loads the shared service (%d is below it)", b.Name, min, k, n)))
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DefaultsFor is the backend defaults in effect for a Buckety whose
// status.parameterDefaults are recorded (provisioned tells whether they
// were ever recorded): the backend's current defaults for a Buckety never
// provisioned, or on a backend that converges them; otherwise what was
// recorded. Every default, the keys the Buckety's spec sets included (it
// wins over them in Effective): one whose override the tenant removes
// falls back to the default recorded for it. nil when there are none.
func (b *Backend) DefaultsFor(recorded map[string]string, provisioned bool) map[string]string {
	src := b.Parameters
	if provisioned && !b.ConvergeParameters {
		src = recorded
	}
	if len(src) == 0 {
		return nil
	}
	return maps.Clone(src)
}

// Effective is spec merged over defaults: the parameters the driver gets.
// spec itself when there are no defaults.
func Effective(spec, defaults map[string]string) map[string]string {
	if len(defaults) == 0 {
		return spec
	}
	out := make(map[string]string, len(spec)+len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range spec {
		out[k] = v
	}
	return out
}

// validateNamespaces checks limits.namespaces.
func (l *Limits) validateNamespaces(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range l.Namespaces {
		n := &l.Namespaces[i]
		pi := p.Index(i)
		if len(n.Names) == 0 && n.Selector == nil {
			errs = append(errs, field.Required(pi, "names or a selector: the namespaces these limits apply to"))
		}
		for j, name := range n.Names {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(pi.Child("names").Index(j), name, msg))
			}
		}
		if n.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(n.Selector)
			if err != nil {
				errs = append(errs, field.Invalid(pi.Child("selector"), field.OmitValueType{}, err.Error()))
			}
			n.selector = sel
		}
		for _, c := range []struct {
			key string
			n   *int
		}{{"perNamespace", n.PerNamespace}, {"accessesPerNamespace", n.AccessesPerNamespace}, {"accessesPerBuckety", n.AccessesPerBuckety}} {
			if c.n != nil && *c.n < 0 {
				errs = append(errs, field.Invalid(pi.Child(c.key), *c.n, "must be at least 0 (0: no limit)"))
			}
		}
		if n.Partitions != nil && *n.Partitions < 0 {
			errs = append(errs, field.Invalid(pi.Child("partitions"), *n.Partitions, "must be at least 0 (0: no budget)"))
		}
	}
	return errs
}

// UsesNamespaceLabels reports whether an entry of limits.namespaces
// selects namespaces by label, so that the namespace's labels must be
// read to find its limits.
func (b *Backend) UsesNamespaceLabels() bool {
	if b.Limits == nil {
		return false
	}
	for i := range b.Limits.Namespaces {
		if b.Limits.Namespaces[i].Selector != nil {
			return true
		}
	}
	return false
}

// ForNamespace is b as namespace ns (with labels nsLabels) sees it: b
// itself, or, when an entry of limits.namespaces matches, a copy whose
// Limits carry that entry's figures, and whose messages name it
// (LimitsKey).
func (b *Backend) ForNamespace(ns string, nsLabels map[string]string) *Backend {
	if b.Limits == nil {
		return b
	}
	for i := range b.Limits.Namespaces {
		n := &b.Limits.Namespaces[i]
		if !n.matches(ns, nsLabels) {
			continue
		}
		l := *b.Limits
		l.Namespaces = nil
		if n.PerNamespace != nil {
			l.PerNamespace = *n.PerNamespace
		}
		if n.AccessesPerNamespace != nil {
			l.AccessesPerNamespace = *n.AccessesPerNamespace
		}
		if n.AccessesPerBuckety != nil {
			l.AccessesPerBuckety = *n.AccessesPerBuckety
		}
		if n.Partitions != nil {
			l.Partitions = *n.Partitions
		}
		if n.DiskBytes != nil {
			l.DiskBytes = *n.DiskBytes
		}
		if n.QuotaBytes != nil {
			l.QuotaBytes = *n.QuotaBytes
		}
		c := *b
		c.Limits = &l
		c.limitsEntry = i
		c.limitsOverride = n
		return &c
	}
	return b
}

func (n *NamespaceLimits) matches(ns string, nsLabels map[string]string) bool {
	for _, name := range n.Names {
		if name == ns {
			return true
		}
	}
	if n.Selector == nil {
		return false
	}
	sel := n.selector
	if sel == nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(n.Selector); err != nil {
			return false
		}
	}
	return sel.Matches(labels.Set(nsLabels))
}

// LimitsKey is where the figure key (perNamespace, partitions, ...) of
// b's limits is set in buckety-controller.yaml, for messages:
// limits.partitions, or limits.namespaces[0].partitions when an override
// of ForNamespace set it.
func (b *Backend) LimitsKey(key string) string {
	if n := b.limitsOverride; n != nil && n.sets(key) {
		return fmt.Sprintf("limits.namespaces[%d].%s", b.limitsEntry, key)
	}
	return "limits." + key
}

func (n *NamespaceLimits) sets(key string) bool {
	switch key {
	case "perNamespace":
		return n.PerNamespace != nil
	case "accessesPerNamespace":
		return n.AccessesPerNamespace != nil
	case "accessesPerBuckety":
		return n.AccessesPerBuckety != nil
	case "partitions":
		return n.Partitions != nil
	case "diskBytes":
		return n.DiskBytes != nil
	case "quotaBytes":
		return n.QuotaBytes != nil
	}
	return false
}

// CheckName applies the backend's reserved names and its name policy to a
// resolved name, with the same substitution sources as the name. The error
// quotes the pattern or the policy.
func (b *Backend) CheckName(src naming.Source, resolved string) error {
	return b.checkName(src, resolved, true)
}

// CheckNameToDelete is CheckName before buckety deletes a resource a
// Buckety held, with reserved patterns matched as written: a name
// reserved only as another spelling of one (Kafka's '.' for '_') cannot
// be the service's own resource, since the service lets one spelling
// exist, and a Buckety that took it before the folding refused it is
// deleted as its retentionPolicy says, rather than kept for good under a
// name no Buckety may take again.
func (b *Backend) CheckNameToDelete(src naming.Source, resolved string) error {
	return b.checkName(src, resolved, false)
}

func (b *Backend) checkName(src naming.Source, resolved string, fold bool) error {
	if p, ok := b.reserved(resolved, fold); ok {
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

// MayBudget reports whether b's limits, or those of some namespace
// (limits.namespaces), budget partitions or bytes.
func (b *Backend) MayBudget() bool {
	if b.Limits == nil {
		return false
	}
	if b.Limits.HasByteBudget() {
		return true
	}
	for i := range b.Limits.Namespaces {
		n := &b.Limits.Namespaces[i]
		if (n.Partitions != nil && *n.Partitions > 0) || (n.DiskBytes != nil && n.DiskBytes.Bytes > 0) || (n.QuotaBytes != nil && n.QuotaBytes.Bytes > 0) {
			return true
		}
	}
	return false
}

// checkLimitKeys refuses limits.parameterMin, parameterMax and
// deniedParameters keys that are not parameters of the driver, where the
// driver can tell (it answers NotSupported for the key itself): a
// misspelt key would otherwise bound nothing, silently. Globs are not
// checked.
func (b *Backend) checkLimitKeys(p *field.Path) field.ErrorList {
	if b.Limits == nil {
		return nil
	}
	unknown := func(k, v string) string {
		kp := field.NewPath("k").Key(k)
		_, errs := b.driver.ValidateParameters(field.NewPath("k"), b.options, nil, map[string]string{k: v})
		for _, e := range errs {
			if e.Type == field.ErrorTypeNotSupported && e.Field == kp.String() && e.BadValue == k {
				return fmt.Sprintf("is not a parameter of driver %s (%s)", b.Driver, e.Detail)
			}
		}
		return ""
	}
	var errs field.ErrorList
	for _, lim := range []struct {
		key string
		m   map[string]int64
	}{{"parameterMin", b.Limits.ParameterMin}, {"parameterMax", b.Limits.ParameterMax}} {
		for _, k := range sortedKeys(lim.m) {
			if msg := unknown(k, strconv.FormatInt(lim.m[k], 10)); msg != "" {
				errs = append(errs, field.Invalid(p.Child(lim.key).Key(k), k, msg))
			}
		}
	}
	for j, k := range b.Limits.DeniedParameters {
		if strings.ContainsAny(k, "*?[") {
			continue
		}
		if msg := unknown(k, "1"); msg != "" {
			errs = append(errs, field.Invalid(p.Child("deniedParameters").Index(j), k, msg))
		}
	}
	return errs
}
