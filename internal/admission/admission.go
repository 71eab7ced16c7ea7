package admission

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/naming"
	"github.com/Yolean/buckety-controller/internal/paramschema"
)

// Validators holds what both validators share: the config and compiled
// schemas.
type Validators struct {
	cfg    *config.Config
	params map[string]*paramschema.Validator
	access map[string]*paramschema.Validator
	lookup BucketyLookup
}

// BucketyLookup finds a Buckety for access validation; the webhook reads
// its informer cache (CacheLookup), never the API server.
type BucketyLookup func(ctx context.Context, namespace, name string) (*v1.Buckety, bool)

// CacheLookup looks Bucketies up in a controller-runtime cache.
func CacheLookup(r client.Reader) BucketyLookup {
	return func(ctx context.Context, ns, name string) (*v1.Buckety, bool) {
		b := &v1.Buckety{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return nil, false
		}
		return b, true
	}
}

// New compiles every driver's schemas used by the config's backends.
func New(cfg *config.Config, lookup BucketyLookup) (*Validators, error) {
	v := &Validators{cfg: cfg, params: map[string]*paramschema.Validator{}, access: map[string]*paramschema.Validator{}, lookup: lookup}
	for _, b := range cfg.Backends {
		d := b.DriverImpl()
		if _, done := v.params[d.Name()]; done {
			continue
		}
		s := d.Schemas()
		pv, err := paramschema.Compile(s.Parameters)
		if err != nil {
			return nil, fmt.Errorf("driver %s parameters schema: %w", d.Name(), err)
		}
		av, err := paramschema.Compile(s.AccessParameters)
		if err != nil {
			return nil, fmt.Errorf("driver %s access parameters schema: %w", d.Name(), err)
		}
		v.params[d.Name()], v.access[d.Name()] = pv, av
	}
	return v, nil
}

// implementation is a backend's declared implementation, for capability
// gating; drivers without the notion return "".
func implementation(b *config.Backend) string {
	if i, ok := b.Options().(interface{ ImplementationName() string }); ok {
		return i.ImplementationName()
	}
	return ""
}

// merge keeps every driver error and the schema errors on fields the driver
// did not flag.
func merge(driver, schema field.ErrorList) field.ErrorList {
	flagged := map[string]bool{}
	for _, e := range driver {
		flagged[e.Field] = true
	}
	out := append(field.ErrorList{}, driver...)
	for _, e := range schema {
		if !flagged[e.Field] {
			out = append(out, e)
			flagged[e.Field] = true
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// parameters validates parameters with the schema and the driver.
func (v *Validators) parameters(ctx context.Context, p *field.Path, b *config.Backend, old, new map[string]string) ([]string, field.ErrorList) {
	d := b.DriverImpl()
	warnings, errs := d.ValidateParameters(p, b.Options(), old, new)
	return warnings, merge(errs, v.params[d.Name()].Validate(ctx, p, new, old, implementation(b)))
}

func (v *Validators) backendList() string {
	names := v.cfg.BackendNames()
	return `"` + strings.Join(names, `", "`) + `"`
}

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
// the controller will, and validates parameters and the default access.
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
	w, perrs := v.parameters(ctx, spec.Child("parameters"), be, nil, b.Spec.Parameters)
	warnings = append(warnings, w...)
	errs = append(errs, perrs...)
	errs = append(errs, adoption(spec.Child("adoption"), be, b.Spec.Adoption)...)
	if da := b.Spec.DefaultAccess; da != nil {
		w, aerrs := d.ValidateAccess(spec.Child("defaultAccess"), be.Options(), roleOf(da.Role), nil)
		warnings = append(warnings, prefixAll("spec.defaultAccess: ", w)...)
		errs = append(errs, aerrs...)
	}
	return warnings, invalid("Buckety", b.Name, errs)
}

// ValidateUpdate enforces the spec's mutability table and validates changed
// parameters against the previous ones (immutability, growth-only).
func (v BucketyValidator) ValidateUpdate(ctx context.Context, old, b *v1.Buckety) (admission.Warnings, error) {
	if !b.DeletionTimestamp.IsZero() {
		return nil, nil // finalizer removal must always go through
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	var warnings admission.Warnings
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
	if !ok {
		warnings = append(warnings, fmt.Sprintf("backend %q is not in the controller config: parameters are not validated, and the controller reports BackendUnavailable", name))
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
		w, perrs := v.parameters(ctx, spec.Child("parameters"), be, prev, b.Spec.Parameters)
		warnings = append(warnings, w...)
		errs = append(errs, perrs...)
	}
	if b.Spec.Adoption != old.Spec.Adoption {
		errs = append(errs, adoption(spec.Child("adoption"), be, b.Spec.Adoption)...)
	}
	if da := b.Spec.DefaultAccess; da != nil && !reflect.DeepEqual(da, old.Spec.DefaultAccess) {
		w, aerrs := be.DriverImpl().ValidateAccess(spec.Child("defaultAccess"), be.Options(), roleOf(da.Role), nil)
		warnings = append(warnings, prefixAll("spec.defaultAccess: ", w)...)
		errs = append(errs, aerrs...)
	}
	return warnings, invalid("Buckety", b.Name, errs)
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

// ValidateDelete admits every deletion; the finalizer handles the rest.
func (BucketyValidator) ValidateDelete(context.Context, *v1.Buckety) (admission.Warnings, error) {
	return nil, nil
}

// AccessValidator validates BucketyAccess objects.
type AccessValidator struct{ *Validators }

var _ admission.Validator[*v1.BucketyAccess] = AccessValidator{}

var roles = []string{string(v1.RoleReadWrite), string(v1.RoleReadOnly), string(v1.RoleWriteOnly)}

// ValidateCreate checks the role and, when the Buckety is known, the
// access parameters against its driver.
func (v AccessValidator) ValidateCreate(ctx context.Context, a *v1.BucketyAccess) (admission.Warnings, error) {
	return v.validate(ctx, a, nil)
}

// ValidateUpdate enforces immutability of bucketyRef and
// credentialsSecretName.
func (v AccessValidator) ValidateUpdate(ctx context.Context, old, a *v1.BucketyAccess) (admission.Warnings, error) {
	if !a.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return v.validate(ctx, a, old)
}

// ValidateDelete admits every deletion.
func (AccessValidator) ValidateDelete(context.Context, *v1.BucketyAccess) (admission.Warnings, error) {
	return nil, nil
}

func (v AccessValidator) validate(ctx context.Context, a, old *v1.BucketyAccess) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	var warnings admission.Warnings
	if old != nil {
		if a.Spec.BucketyRef != old.Spec.BucketyRef {
			errs = append(errs, field.Forbidden(spec.Child("bucketyRef"), fmt.Sprintf("is immutable (was %q): create a new BucketyAccess for another Buckety", old.Spec.BucketyRef.Name)))
		}
		if a.Spec.CredentialsSecretName != old.Spec.CredentialsSecretName {
			errs = append(errs, field.Forbidden(spec.Child("credentialsSecretName"), fmt.Sprintf("is immutable (was %q): create a new BucketyAccess to write another Secret", old.Spec.CredentialsSecretName)))
		}
	}
	role := roleOf(a.Spec.Role)
	if !contains(roles, role) {
		errs = append(errs, field.NotSupported(spec.Child("role"), role, roles))
	}
	changed := old == nil || role != roleOf(old.Spec.Role) || !reflect.DeepEqual(a.Spec.Parameters, old.Spec.Parameters)
	if !changed || len(errs) > 0 {
		return warnings, invalid("BucketyAccess", a.Name, errs)
	}
	be, found := v.backendOf(ctx, namespaceOf(ctx, a.Namespace), a.Spec.BucketyRef.Name)
	if be == nil {
		if found == "" {
			warnings = append(warnings, fmt.Sprintf("Buckety %s not found (yet): role and parameters are validated by the controller once it exists", a.Spec.BucketyRef.Name))
		} else {
			warnings = append(warnings, fmt.Sprintf("backend %q of Buckety %s is not in the controller config: parameters are not validated", found, a.Spec.BucketyRef.Name))
		}
		if role != string(v1.RoleReadWrite) {
			warnings = append(warnings, fmt.Sprintf("role %s is not enforced in v1alpha1: every access receives the same credentials (ScopingNotImplemented)", role))
		}
		return warnings, invalid("BucketyAccess", a.Name, errs)
	}
	d := be.DriverImpl()
	w, aerrs := d.ValidateAccess(spec.Child("parameters"), be.Options(), role, a.Spec.Parameters)
	warnings = append(warnings, w...)
	errs = append(errs, merge(aerrs, v.access[d.Name()].Validate(ctx, spec.Child("parameters"), a.Spec.Parameters, nil, implementation(be)))...)
	return warnings, invalid("BucketyAccess", a.Name, errs)
}

// backendOf finds the backend of a Buckety from the cache: the config entry,
// or the backend name when it is not configured ("" when the Buckety is not
// found).
func (v AccessValidator) backendOf(ctx context.Context, ns, name string) (*config.Backend, string) {
	if v.lookup == nil {
		return nil, ""
	}
	b, ok := v.lookup(ctx, ns, name)
	if !ok {
		return nil, ""
	}
	backend := b.Status.Backend
	if backend == "" {
		backend = b.Spec.Backend
	}
	be, ok := v.cfg.Backend(backend)
	if !ok {
		return nil, backend
	}
	return be, backend
}

func roleOf(r v1.Role) string {
	if r == "" {
		return string(v1.RoleReadWrite)
	}
	return string(r)
}

func prefixAll(p string, ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = p + w
	}
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
