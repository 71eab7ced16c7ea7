package admission

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/internal/sharing"
)

// AccessValidator validates BucketyAccess objects.
type AccessValidator struct{ *Validators }

var _ admission.Validator[*v1.BucketyAccess] = AccessValidator{}

var roles = []string{string(v1.RoleReadWrite), string(v1.RoleReadOnly), string(v1.RoleWriteOnly)}

// ValidateCreate checks the name, the role and, when the Buckety is known,
// the access parameters against its driver.
func (v AccessValidator) ValidateCreate(ctx context.Context, a *v1.BucketyAccess) (admission.Warnings, error) {
	return v.validate(ctx, a, nil)
}

// ValidateUpdate enforces immutability of bucketyRef and
// credentialsSecretName.
func (v AccessValidator) ValidateUpdate(ctx context.Context, old, a *v1.BucketyAccess) (admission.Warnings, error) {
	if !a.DeletionTimestamp.IsZero() {
		// Nothing but the slot label is checked: a finalizer's removal
		// must always go through, and an access relabelled while its
		// deletion waits would leave every shard's cache, its
		// credential never revoked.
		return nil, invalid("BucketyAccess", a.Name, shard.CheckLabel(a.Labels, old.Labels, shard.AccessValue(inNamespace(ctx, a))))
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
		errs = append(errs, immutable(a, old)...)
	} else {
		errs = append(errs, accessName(a.Name)...)
	}
	var was map[string]string
	if old != nil {
		was = old.Labels
	}
	errs = append(errs, shard.CheckLabel(a.Labels, was, shard.AccessValue(inNamespace(ctx, a)))...)
	role := roleOf(a.Spec.Role)
	if !contains(roles, role) {
		errs = append(errs, field.NotSupported(spec.Child("role"), role, roles))
	}
	if a.Several() {
		errs = append(errs, sharing.ValidateRefs(a)...)
	}
	changed := old == nil || role != roleOf(old.Spec.Role) || !reflect.DeepEqual(a.Spec.Parameters, old.Spec.Parameters) ||
		!slices.Equal(a.Spec.SecretFormats, old.Spec.SecretFormats)
	if !changed || len(errs) > 0 {
		return warnings, invalid("BucketyAccess", a.Name, errs)
	}
	ns := namespaceOf(ctx, a.Namespace)
	refs := a.Refs()
	for i, ref := range refs {
		if refNS := refNamespace(ref, ns); refNS != ns {
			errs = append(errs, v.consent(ctx, refPath(a, i), refNS, ref.Name, ns, v1.Role(role))...)
		}
	}
	if len(errs) > 0 {
		return warnings, invalid("BucketyAccess", a.Name, errs)
	}
	be, first, ws, berrs := v.backendOfRefs(ctx, a, ns)
	if warnings = append(warnings, ws...); len(berrs) > 0 || be == nil {
		if be == nil && role != string(v1.RoleReadWrite) {
			warnings = append(warnings, fmt.Sprintf("role %s is not enforced unless the Buckety's backend issues credentials per access (its ScopingNotImplemented condition says)", role))
		}
		return warnings, invalid("BucketyAccess", a.Name, berrs)
	}
	if old == nil {
		// Each Buckety named, from the first found: an access naming a
		// roomy Buckety first and a full one after was admitted, and only
		// the controller held it.
		for i := first; i < len(refs); i++ {
			ref := refs[i]
			refNS := refNamespace(ref, ns)
			if lerrs := v.accessLimit(ctx, refPath(a, i), v.forNamespace(ctx, be, ns), v.forNamespace(ctx, be, refNS), ns, refNS, ref.Name); len(lerrs) > 0 {
				errs = append(errs, lerrs...)
				break
			}
		}
	}
	d := be.DriverImpl()
	if a.Several() {
		errs = append(errs, sharing.ValidateSeveral(a, d, be.Name, be.BucketyRefsPerAccess())...)
	}
	w, aerrs := d.ValidateAccess(spec.Child("parameters"), be.Options(), drivers.Role(role), a.Spec.Parameters)
	warnings = append(warnings, w...)
	errs = append(errs, merge(aerrs, v.access[d.Name()].Validate(ctx, spec.Child("parameters"), a.Spec.Parameters, nil))...)
	errs = append(errs, drivers.ValidateSecretFormats(spec.Child("secretFormats"), d, a.Spec.SecretFormats)...)
	return warnings, invalid("BucketyAccess", a.Name, errs)
}

// immutable refuses a change of the Bucketies an access names or of its
// Secret.
func immutable(a, old *v1.BucketyAccess) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch {
	case old.Several() && !slices.Equal(a.Spec.BucketyRefs, old.Spec.BucketyRefs):
		errs = append(errs, field.Forbidden(spec.Child("bucketyRefs"), "is immutable: create a new BucketyAccess for other Bucketies"))
	case !old.Several() && a.Spec.BucketyRef != old.Spec.BucketyRef:
		errs = append(errs, field.Forbidden(spec.Child("bucketyRef"), fmt.Sprintf("is immutable (was %q): create a new BucketyAccess for another Buckety", old.Spec.BucketyRef.Name)))
	}
	if a.Spec.CredentialsSecretName != old.Spec.CredentialsSecretName {
		errs = append(errs, field.Forbidden(spec.Child("credentialsSecretName"), fmt.Sprintf("is immutable (was %q): create a new BucketyAccess to write another Secret", old.Spec.CredentialsSecretName)))
	}
	return errs
}

// accessName refuses, on create, a name longer than a label value holds:
// the access's Secret is labelled with it, and the API server would refuse
// that Secret on every pass. An existing access keeps its name; the
// controller reports one that got past admission.
func accessName(name string) field.ErrorList {
	msg := v1.AccessNameTooLong(name)
	if msg == "" {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, fmt.Sprintf("%s; choose a name of at most %d characters", msg, v1.MaxAccessNameLength))}
}

// backendOfRefs finds the backend of the Bucketies the access names, from
// the cache: the config entry of the first found (first is its index),
// nil when none is found or its backend is not configured (warnings say
// which). One found on another backend than the first is an error: the
// Bucketies of one access share one backend.
func (v AccessValidator) backendOfRefs(ctx context.Context, a *v1.BucketyAccess, ns string) (be *config.Backend, first int, warnings admission.Warnings, errs field.ErrorList) {
	name := ""
	for i, ref := range a.Refs() {
		got, found := v.backendOf(ctx, refNamespace(ref, ns), ref.Name)
		switch {
		case found == "":
			warnings = append(warnings, fmt.Sprintf("Buckety %s not found (yet): role and parameters are validated by the controller once it exists", ref.Name))
		case name == "":
			name, be, first = found, got, i
			if got == nil {
				warnings = append(warnings, fmt.Sprintf("backend %q of Buckety %s is not in the controller config: parameters are not validated", found, ref.Name))
			}
		case found != name:
			errs = append(errs, field.Invalid(refPath(a, i), ref.Name, fmt.Sprintf("Buckety %s is on backend %s and %s on backend %s: the Bucketies of one access share one backend", ref.Name, found, a.Refs()[first].Name, name)))
		}
	}
	return be, first, warnings, errs
}

// refNamespace is the namespace of the Buckety ref names, from an access
// of namespace ns.
func refNamespace(ref v1.BucketyReference, ns string) string {
	if ref.Namespace != "" {
		return ref.Namespace
	}
	return ns
}

// refPath is the path of the access's i-th Buckety reference.
func refPath(a *v1.BucketyAccess, i int) *field.Path {
	if a.Several() {
		return field.NewPath("spec", "bucketyRefs").Index(i)
	}
	return field.NewPath("spec", "bucketyRef")
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

// consent checks that Buckety refNS/name shares role with namespace ns
// (sharing.Refusal): an access to another namespace's Buckety is admitted
// only with its owner's consent, within the backend's sharing
// configuration. A Buckety that cannot be found, or whose consent cannot
// be read, refuses: nothing is shared by default.
func (v AccessValidator) consent(ctx context.Context, p *field.Path, refNS, name, ns string, role v1.Role) field.ErrorList {
	var b *v1.Buckety
	found := false
	if v.lookup != nil {
		b, found = v.lookup(ctx, refNS, name)
	}
	if !found || !b.DeletionTimestamp.IsZero() {
		return field.ErrorList{field.Forbidden(p, sharing.NotShared(refNS, name, ns, role))}
	}
	be, ok := v.cfg.Backend(backendName(b))
	if !ok {
		// Its owner's Buckety says what is wrong with its backend; the
		// consumer learns nothing more than of a Buckety that shares not.
		return field.ErrorList{field.Forbidden(p, sharing.NotShared(refNS, name, ns, role))}
	}
	var ownerLabels, nsLabels map[string]string
	if sharing.NeedsLabels(be, b) {
		var err error
		if v.labels == nil {
			err = errors.New("the webhook reads no namespace labels")
		} else if ownerLabels, err = v.labels(ctx, refNS); err == nil {
			nsLabels, err = v.labels(ctx, ns)
		}
		if err != nil {
			return field.ErrorList{field.InternalError(p, fmt.Errorf("cannot read the namespace labels Buckety %s/%s shares by: %w", refNS, name, err))}
		}
	}
	if msg := sharing.Refusal(be, b, ownerLabels, ns, nsLabels, role); msg != "" {
		return field.ErrorList{field.Forbidden(p, msg)}
	}
	return nil
}
