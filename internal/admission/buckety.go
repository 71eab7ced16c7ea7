package admission

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/naming"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// BucketyValidator validates Buckety objects.
type BucketyValidator struct{ *Validators }

var _ admission.Validator[*v1.Buckety] = BucketyValidator{}

func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(v1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}

// namespaceOf is the object's namespace, or the request's when a create
// omits it.
func namespaceOf(ctx context.Context, ns string) string {
	if ns != "" {
		return ns
	}
	if req, err := admission.RequestFromContext(ctx); err == nil {
		return req.Namespace
	}
	return ""
}

// ValidateCreate checks the backend, resolves the naming template exactly as
// the controller will, and validates parameters and the default access (the
// name it gives its access included).
func (v BucketyValidator) ValidateCreate(ctx context.Context, b *v1.Buckety) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	var warnings admission.Warnings
	be, ok := v.cfg.Backend(b.Spec.Backend)
	if !ok {
		errs = append(errs, field.Invalid(spec.Child("backend"), b.Spec.Backend, fmt.Sprintf("no such backend in the controller config; available: %s", v.backendList())))
		return warnings, invalid("Buckety", b.Name, errs)
	}
	d := be.DriverImpl()
	src := naming.Source{Name: b.Name, Namespace: namespaceOf(ctx, b.Namespace), Labels: b.Labels, BackendName: be.Name, Defaults: be.Defaults}
	be = v.forNamespace(ctx, be, src.Namespace)
	tmpl := b.Spec.Name
	if tmpl == "" {
		tmpl = naming.DefaultTemplate
	}
	resolved, err := naming.Resolve(b.Spec.Name, src)
	if err != nil {
		errs = append(errs, field.Invalid(spec.Child("name"), tmpl, err.Error()))
	} else {
		w, nerrs := d.ValidateName(spec.Child("name"), be.Options(), resolved)
		warnings = append(warnings, w...)
		for _, e := range nerrs {
			errs = append(errs, field.Invalid(spec.Child("name"), tmpl, fmt.Sprintf("resolves to %q, which driver %s rejects: %s", resolved, d.Name(), e.ErrorBody())))
		}
		if err := be.CheckName(src, resolved); err != nil {
			errs = append(errs, field.Forbidden(spec.Child("name"), err.Error()))
		}
	}
	w, perrs := v.parameters(ctx, spec.Child("parameters"), be, be.DefaultsFor(nil, false), nil, b.Spec.Parameters)
	warnings = append(warnings, w...)
	errs = append(errs, perrs...)
	errs = append(errs, adoption(spec.Child("adoption"), be, b.Spec.Adoption)...)
	errs = append(errs, drain(spec.Child("drain"), be, b.Spec.Drain)...)
	errs = append(errs, sharingRules(spec.Child("sharing"), be, src.Namespace, b.Spec.Sharing)...)
	warnings = append(warnings, sharedKeys(be, b.Spec.Sharing)...)
	errs = append(errs, shard.CheckLabel(b.Labels, nil, shard.BucketyValue(inNamespace(ctx, b)))...)
	errs = append(errs, v.limit(ctx, spec.Child("backend"), be, src.Namespace)...)
	if len(perrs) == 0 {
		errs = append(errs, v.checkBudget(ctx, spec, be, src.Namespace, b.Name, nil, config.Effective(b.Spec.Parameters, be.DefaultsFor(nil, false)))...)
	}
	if da := b.Spec.DefaultAccess; da != nil {
		errs = append(errs, implicitName(b.Name)...)
		w, aerrs := d.ValidateAccess(spec.Child("defaultAccess"), be.Options(), drivers.Role(roleOf(da.Role)), nil)
		warnings = append(warnings, prefixAll("spec.defaultAccess: ", w)...)
		errs = append(errs, aerrs...)
		errs = append(errs, drivers.ValidateSecretFormats(spec.Child("defaultAccess", "secretFormats"), d, da.SecretFormats)...)
	}
	return warnings, invalid("Buckety", b.Name, errs)
}

// ValidateUpdate enforces the spec's mutability table, validates changed
// parameters against the previous ones (immutability, growth-only), and
// checks the name a spec.defaultAccess added now gives its access.
func (v BucketyValidator) ValidateUpdate(ctx context.Context, old, b *v1.Buckety) (admission.Warnings, error) {
	if !b.DeletionTimestamp.IsZero() && reflect.DeepEqual(old.Spec, b.Spec) {
		// A finalizer's removal must always go through; only the slot
		// label is checked (relabelled while its deletion waits, the
		// Buckety would leave every shard's cache).
		return nil, invalid("Buckety", b.Name, shard.CheckLabel(b.Labels, old.Labels, shard.BucketyValue(inNamespace(ctx, b))))
	}
	// A spec changed while the Buckety is being deleted is checked like any
	// other: deletion acts on its parameters, and an immutable one (an R2
	// jurisdiction, which picks the endpoint the delete goes to) must not
	// change there either.
	spec := field.NewPath("spec")
	var errs field.ErrorList
	var warnings admission.Warnings
	errs = append(errs, shard.CheckLabel(b.Labels, old.Labels, shard.BucketyValue(inNamespace(ctx, b)))...)
	if b.Spec.DefaultAccess != nil && old.Spec.DefaultAccess == nil {
		errs = append(errs, implicitName(b.Name)...)
	}
	if b.Spec.Backend != old.Spec.Backend {
		errs = append(errs, field.Forbidden(spec.Child("backend"), fmt.Sprintf("is immutable (was %q): create a new Buckety to use another backend", old.Spec.Backend)))
	}
	if b.Spec.Name != old.Spec.Name {
		errs = append(errs, field.Forbidden(spec.Child("name"), fmt.Sprintf("is immutable (was %q): the backend resource name is resolved once; create a new Buckety for another name", old.Spec.Name)))
	}
	name := old.Status.Backend
	if name == "" {
		name = old.Spec.Backend
	}
	be, ok := v.cfg.Backend(name)
	if ok {
		be = v.forNamespace(ctx, be, namespaceOf(ctx, b.Namespace))
	}
	if !ok {
		// The backend left the config; its driver's published rules on
		// changes (immutable keys, growth only) still hold.
		warnings = append(warnings, fmt.Sprintf("backend %q is not in the controller config: only the driver's rules on changes are checked, and the controller reports BackendUnavailable", name))
		if pv, known := v.params[old.Status.Driver]; known && !reflect.DeepEqual(old.Spec.Parameters, b.Spec.Parameters) {
			errs = append(errs, transitions(pv.Validate(ctx, spec.Child("parameters"), b.Spec.Parameters, nonNil(old.Spec.Parameters)), old.Spec.Parameters, b.Spec.Parameters)...)
		}
		if !reflect.DeepEqual(b.Spec.Sharing, old.Spec.Sharing) {
			errs = append(errs, sharingShape(spec.Child("sharing"), namespaceOf(ctx, b.Namespace), b.Spec.Sharing)...)
		}
		return warnings, invalid("Buckety", b.Name, errs)
	}
	if !reflect.DeepEqual(old.Spec.Parameters, b.Spec.Parameters) {
		prev := nonNil(old.Spec.Parameters)
		if adoptionPending(old) {
			// Nothing was applied yet: the tenant must be able to write
			// the values the adopted resource already has, even where
			// they are lower than (or differ from) what was asked first.
			prev = nil
		}
		// Judged with the defaults the Buckety recorded, so that a default
		// the platform changed never refuses a tenant's edit.
		defaults := be.DefaultsFor(old.Status.ParameterDefaults, old.Status.Provenance != "")
		w, perrs := v.parameters(ctx, spec.Child("parameters"), be, defaults, prev, b.Spec.Parameters)
		warnings = append(warnings, w...)
		errs = append(errs, perrs...)
		if len(perrs) == 0 {
			// Both sides with the defaults in effect for the Buckety (its
			// status, which the API server keeps from the stored object).
			provisioned := old.Status.Provenance != ""
			was := config.Effective(nonNil(old.Spec.Parameters), be.DefaultsFor(old.Status.ParameterDefaults, provisioned))
			now := config.Effective(b.Spec.Parameters, be.DefaultsFor(old.Status.ParameterDefaults, provisioned))
			errs = append(errs, v.checkBudget(ctx, spec, be, namespaceOf(ctx, b.Namespace), b.Name, was, now)...)
		}
	}
	if b.Spec.Adoption != old.Spec.Adoption {
		errs = append(errs, adoption(spec.Child("adoption"), be, b.Spec.Adoption)...)
	}
	if !reflect.DeepEqual(b.Spec.Drain, old.Spec.Drain) {
		errs = append(errs, drain(spec.Child("drain"), be, b.Spec.Drain)...)
	}
	if !reflect.DeepEqual(b.Spec.Sharing, old.Spec.Sharing) && len(b.Spec.Sharing) > 0 {
		errs = append(errs, sharingRules(spec.Child("sharing"), be, namespaceOf(ctx, b.Namespace), b.Spec.Sharing)...)
		warnings = append(warnings, sharedKeys(be, b.Spec.Sharing)...)
	}
	if da := b.Spec.DefaultAccess; da != nil && !reflect.DeepEqual(da, old.Spec.DefaultAccess) {
		w, aerrs := be.DriverImpl().ValidateAccess(spec.Child("defaultAccess"), be.Options(), drivers.Role(roleOf(da.Role)), nil)
		warnings = append(warnings, prefixAll("spec.defaultAccess: ", w)...)
		errs = append(errs, aerrs...)
		errs = append(errs, drivers.ValidateSecretFormats(spec.Child("defaultAccess", "secretFormats"), be.DriverImpl(), da.SecretFormats)...)
	}
	return warnings, invalid("Buckety", b.Name, errs)
}

// implicitName refuses spec.defaultAccess on a Buckety whose name is
// longer than a label value holds: its implicit access takes the name, and
// that access's Secret is labelled with it. Checked on create and when
// spec.defaultAccess is added; a Buckety that has it keeps its name, and
// the controller reports one that got past admission.
func implicitName(name string) field.ErrorList {
	msg := v1.AccessNameTooLong(name)
	if msg == "" {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, fmt.Sprintf("%s, and spec.defaultAccess names its BucketyAccess after the Buckety; choose a name of at most %d characters, or create a BucketyAccess with a shorter name instead of spec.defaultAccess", msg, v1.MaxAccessNameLength))}
}

// transitions keeps the errors on keys that changed (added, removed or
// altered): what the driver's rules on changes refuse, without judging
// unchanged values against a backend that is gone.
func transitions(errs field.ErrorList, old, new map[string]string) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		for k := range union(old, new) {
			if e.Field == "spec.parameters["+k+"]" && (old[k] != new[k] || hasKey(old, k) != hasKey(new, k)) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

func union(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// adoptionPending reports whether b adopted a resource whose differences
// from spec.parameters wait for the tenant (Ready reason AdoptionDrift) and
// was never provisioned: nothing of spec.parameters has been applied, so
// they are validated as on create, without the growth-only and immutability
// rules that protect an applied value.
func adoptionPending(b *v1.Buckety) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady)
	return b.Status.Provenance == "" && c != nil && c.Reason == v1.ReasonAdoptionDrift
}

// adoption rejects the tenant's key to adoption when the maintainer's is
// missing: spec.adoption may ask to adopt only on a backend whose config
// sets adoption.allow. It is checked on create and when the field changes,
// so a backend that stops allowing adoption does not block other updates.
func adoption(p *field.Path, be *config.Backend, a v1.Adoption) field.ErrorList {
	if !a.Adopts() || be.AllowsAdoption() {
		return nil
	}
	return field.ErrorList{field.Forbidden(p, fmt.Sprintf("%s is not allowed on backend %q: its configuration in buckety-controller.yaml does not set adoption.allow, so buckety never takes over an existing resource with content there; remove spec.adoption (or set it to Refuse), or ask the cluster maintainer", a, be.Name))}
}

// drain rejects spec.drain where the backend does not allow it
// (drain.allow in buckety-controller.yaml, by default the driver's: on for
// S3, off for Kafka) or its driver cannot drain, and durations out of
// range. Checked on create and when the field changes, so a backend that
// stops allowing drains does not block other updates (the controller
// stops a running drain itself). slowInterval may not be shorter than the
// interval it slows from: spec.drain.interval, else the backend's.
// Removing spec.drain is always allowed: it cancels.
func drain(p *field.Path, be *config.Backend, d *v1.DrainSpec) field.ErrorList {
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	if msg := be.DrainRefusal(); msg != "" {
		errs = append(errs, field.Forbidden(p, msg))
	}
	if d.Interval != nil && d.Interval.Duration < config.MinDrainInterval {
		errs = append(errs, field.Invalid(p.Child("interval"), d.Interval.Duration.String(), fmt.Sprintf("must be at least %s (absent: the backend's drain.interval, else %s)", config.MinDrainInterval, config.DefaultDrainInterval)))
	}
	if d.SlowInterval != nil {
		iv, from := be.DrainInterval(), "the backend's drain.interval"
		if d.Interval != nil {
			iv, from = d.Interval.Duration, "spec.drain.interval"
		} else if be.Drain == nil || be.Drain.Interval.Duration == 0 {
			from = "the default interval"
		}
		if msg := config.SlowIntervalProblem(d.SlowInterval.Duration, iv, from); msg != "" {
			errs = append(errs, field.Invalid(p.Child("slowInterval"), d.SlowInterval.Duration.String(), msg))
		}
	}
	if d.StuckAfter != nil && d.StuckAfter.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("stuckAfter"), d.StuckAfter.Duration.String(), fmt.Sprintf("must be positive (absent: the backend's drain.stuckAfter, else %s)", config.DefaultDrainStuckAfter)))
	}
	return errs
}

// ValidateDelete admits every deletion; the finalizer handles the rest.
func (BucketyValidator) ValidateDelete(context.Context, *v1.Buckety) (admission.Warnings, error) {
	return nil, nil
}

// sharingRules rejects spec.sharing where the backend does not allow
// sharing (sharing.allow: false in buckety-controller.yaml), rules naming
// the Buckety's own namespace (its accesses need none), and selectors that
// do not parse. Narrowing or removing rules is always allowed: the
// accesses they admitted lose their rights at their next pass.
func sharingRules(p *field.Path, be *config.Backend, ns string, rules []v1.SharingRule) field.ErrorList {
	if len(rules) == 0 {
		return nil
	}
	if !be.AllowsSharing() {
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("backend %q does not allow sharing between namespaces: its configuration in buckety-controller.yaml sets sharing.allow: false; remove spec.sharing, or ask the cluster maintainer", be.Name))}
	}
	return sharingShape(p, ns, rules)
}

// sharedKeys warns the owner of a Buckety shared on a backend that does
// not issue a credential per access (its driver would not enforce a
// ReadOnly access: no credentials, or shared ones, in its configuration):
// another namespace's access then holds the backend's own credentials,
// whatever role a rule names, and removing the rule deletes that access's
// Secret but cannot revoke what was read from it. Admitted all the same:
// any namespace may use the backend, and get the same credentials, with a
// Buckety of its own.
func sharedKeys(be *config.Backend, rules []v1.SharingRule) admission.Warnings {
	if len(rules) == 0 {
		return nil
	}
	if w, _ := be.DriverImpl().ValidateAccess(field.NewPath("spec", "sharing"), be.Options(), drivers.RoleReadOnly, nil); len(w) == 0 {
		return nil
	}
	return admission.Warnings{fmt.Sprintf("spec.sharing: backend %q issues no credential per access, so an access of another namespace is handed the backend's own credentials, if it has any, whatever role the rule names; removing the rule deletes that access's Secret but cannot revoke what was read from it", be.Name)}
}

// sharingShape is what sharingRules judges without the backend: rules
// naming the Buckety's own namespace, selectors past their bounds or that
// do not parse. A Buckety whose backend left the config is still held in
// every replica's and webhook's cache, so its selectors are bounded too.
func sharingShape(p *field.Path, ns string, rules []v1.SharingRule) field.ErrorList {
	var errs field.ErrorList
	for i := range rules {
		r := &rules[i]
		if r.Namespace != "" && r.Namespace == ns {
			errs = append(errs, field.Invalid(p.Index(i).Child("namespace"), r.Namespace, "is the Buckety's own namespace, whose accesses need no sharing rule"))
		}
		if r.NamespaceSelector != nil {
			if bad := selectorTooLarge(p.Index(i).Child("namespaceSelector"), r.NamespaceSelector); len(bad) > 0 {
				errs = append(errs, bad...)
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(r.NamespaceSelector); err != nil {
				errs = append(errs, field.Invalid(p.Index(i).Child("namespaceSelector"), r.NamespaceSelector, err.Error()))
			}
		}
	}
	return errs
}

// The bounds of a sharing rule's namespaceSelector. The CRD cannot bound
// a metav1.LabelSelector's lists, and every controller replica and
// webhook holds each Buckety's spec in its cache: a selector of a million
// values (an object near etcd's 1.5 MiB limit) cost several MiB of heap
// in each, so a few dozen ran them out of memory.
const (
	maxSelectorLabels      = 32
	maxSelectorExpressions = 16
	maxSelectorValues      = 64
)

// selectorTooLarge reports the parts of sel past those bounds, naming
// each field.
func selectorTooLarge(p *field.Path, sel *metav1.LabelSelector) field.ErrorList {
	var errs field.ErrorList
	if n := len(sel.MatchLabels); n > maxSelectorLabels {
		errs = append(errs, field.TooMany(p.Child("matchLabels"), n, maxSelectorLabels))
	}
	if n := len(sel.MatchExpressions); n > maxSelectorExpressions {
		errs = append(errs, field.TooMany(p.Child("matchExpressions"), n, maxSelectorExpressions))
	}
	for j := range sel.MatchExpressions {
		if n := len(sel.MatchExpressions[j].Values); n > maxSelectorValues {
			errs = append(errs, field.TooMany(p.Child("matchExpressions").Index(j).Child("values"), n, maxSelectorValues))
		}
	}
	return errs
}

// inNamespace is a copy of o in its namespace as the request names it
// (o's own, or the request's on create), for what depends on it: the
// shard slot label's value.
func inNamespace[T any, P interface {
	*T
	client.Object
}](ctx context.Context, o P) P {
	c := P(new(T))
	*c = *o
	c.SetNamespace(namespaceOf(ctx, o.GetNamespace()))
	return c
}
