package v1alpha1

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of spec.parameters, enforced by the CRD schema (the API server),
// by the webhook and by the controller, with the same numbers: every
// Buckety stays small, so what a tenant can make the controller and the
// webhook hold in memory is bounded per object.
const (
	// MaxParameters is the most keys spec.parameters may have.
	MaxParameters = 64
	// MaxParameterKeyLength is the longest key.
	MaxParameterKeyLength = 253
	// MaxParameterValueLength is the longest value.
	MaxParameterValueLength = 4096
)

// ValidateParameterBounds checks params against the bounds above; errors
// name the key.
func ValidateParameterBounds(fldPath *field.Path, params map[string]string) field.ErrorList {
	var errs field.ErrorList
	if len(params) > MaxParameters {
		errs = append(errs, field.TooMany(fldPath, len(params), MaxParameters))
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(k) > MaxParameterKeyLength {
			errs = append(errs, field.Invalid(fldPath.Key(k[:32]+"..."), len(k), fmt.Sprintf("a key of %d characters; keys are at most %d", len(k), MaxParameterKeyLength)))
			continue
		}
		if v := params[k]; len(v) > MaxParameterValueLength {
			errs = append(errs, field.TooLong(fldPath.Key(k), "", MaxParameterValueLength))
		}
	}
	return errs
}

// MaxAccessNameLength is the longest metadata.name of a BucketyAccess, and
// of a Buckety with spec.defaultAccess (its implicit access takes its
// name): buckety labels the access's Secret with the access's name
// (AccessLabel), and a label value is at most 63 characters. The webhook
// refuses a longer one on create; the controller issues nothing for one
// that got past it (AccessNameTooLong).
const MaxAccessNameLength = 63

// AccessNameTooLong says why name cannot name a BucketyAccess, in the
// words the webhook and the controller share ("" when it can).
func AccessNameTooLong(name string) string {
	if len(name) <= MaxAccessNameLength {
		return ""
	}
	return fmt.Sprintf("is %d characters, more than the %d a label value holds: buckety labels the access's Secret with the access's name (%s)", len(name), MaxAccessNameLength, AccessLabel)
}
