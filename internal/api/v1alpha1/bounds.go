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
