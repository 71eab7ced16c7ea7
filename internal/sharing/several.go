package sharing

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// The rules of an access naming several Bucketies (spec.bucketyRefs), the
// webhook's and the controller's alike.

// MaxRefKey bounds a Buckety's key in the Secret's per-resource keys: a
// Secret data key is at most 253 characters, and the longest base a driver
// puts before the dot ("bucket", "region") leaves this much.
const MaxRefKey = 253 - len("bucket.")

// ValidateRefs checks what spec.bucketyRefs says on its own: no Buckety
// named twice (a namespace omitted and the access's own spelled out are
// one), and keys that fit a Secret's.
func ValidateRefs(a *v1.BucketyAccess) field.ErrorList {
	p := field.NewPath("spec", "bucketyRefs")
	var errs field.ErrorList
	seen := map[string]int{}
	for i, ref := range a.Spec.BucketyRefs {
		k := a.RefKey(ref)
		if j, dup := seen[k]; dup {
			errs = append(errs, field.Duplicate(p.Index(i), fmt.Sprintf("Buckety %s/%s, as spec.bucketyRefs[%d]", a.RefNamespace(ref), ref.Name, j)))
			continue
		}
		seen[k] = i
		if len(k) > MaxRefKey {
			errs = append(errs, field.Invalid(p.Index(i), ref.Name, fmt.Sprintf("its key in the Secret, %q, is longer than the %d characters a Secret key leaves it", k, MaxRefKey)))
		}
	}
	return errs
}

// ValidateSeveral checks spec.bucketyRefs against the backend its
// Bucketies are on: at most most of them, a driver that grants several,
// and secret formats that hold several.
func ValidateSeveral(a *v1.BucketyAccess, d drivers.Driver, backend string, most int) field.ErrorList {
	p := field.NewPath("spec", "bucketyRefs")
	var errs field.ErrorList
	if n := len(a.Spec.BucketyRefs); n > most {
		errs = append(errs, field.TooMany(p, n, most))
	}
	if _, ok := d.(drivers.SeveralGranter); !ok {
		errs = append(errs, field.Invalid(p, len(a.Spec.BucketyRefs), fmt.Sprintf("driver %s of backend %s grants one resource per access: name one Buckety in spec.bucketyRef", d.Name(), backend)))
	}
	return append(errs, drivers.ValidateSeveralFormats(field.NewPath("spec", "secretFormats"), d, a.Spec.SecretFormats)...)
}
