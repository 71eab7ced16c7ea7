// Package paramschema evaluates a driver's published parameters schema: the
// JSON schema (types, patterns, enums, allowed keys) with Kubernetes'
// OpenAPI validator, and its x-kubernetes-validations CEL rules (with
// oldSelf transition rules for immutability) with Kubernetes'
// structural-schema CEL validator, which is built on cel-go.
//
// Using the published schema, not only the driver's Go checks, keeps the
// file that editors and downstream platforms validate against honest: what
// the schema says is what admission enforces. Everything is compiled once at
// start-up; validation does no I/O.
package paramschema

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// Validator is one compiled parameters schema.
type Validator struct {
	openapi validation.SchemaValidator
	// patterns are the schema's patternProperties, taken out of openapi
	// (see hoistPatterns); regular are its properties.
	patterns   []pattern
	regular    map[string]bool
	structural *structuralschema.Structural
	cel        *cel.Validator
}

// pattern is one of the schema's patternProperties with its regular
// expression compiled once. Kube-openapi's validator compiles the
// expression again for every key of every object it validates, twice
// (regexp.MatchString): that was 40 % of the webhook's validation of a
// Buckety with four parameters.
type pattern struct {
	re *regexp.Regexp
	// values validates the keys the expression matches: an object whose
	// additionalProperties is the pattern's schema, which kube-openapi
	// checks with the same schema at the same paths as the pattern.
	values validation.SchemaValidator
}

// Compile compiles a driver's parameters schema. An error means the
// published schema is broken (a CEL rule does not compile), which must stop
// the webhook at start-up rather than admit anything.
func Compile(s *jsonschema.Schema) (*Validator, error) {
	return compile(s, true)
}

// compile is Compile; hoist takes the top level's patternProperties out
// of the OpenAPI validator where that keeps every verdict (hoistPatterns).
func compile(s *jsonschema.Schema, hoist bool) (*Validator, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, fmt.Errorf("schema is not an OpenAPI v3 schema: %w", err)
	}
	props.Schema = ""
	props.ID = ""
	rules := props.XValidations
	props.XValidations = nil
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&props, &internal, nil); err != nil {
		return nil, err
	}
	v := &Validator{}
	if hoist {
		if err := v.hoistPatterns(&internal); err != nil {
			return nil, err
		}
	}
	openapi, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	v.openapi = openapi
	// The CEL rules run against a structural view: an object of strings.
	// Structure itself is checked by the OpenAPI validator above.
	v.structural = &structuralschema.Structural{
		Generic: structuralschema.Generic{Type: "object"},
		AdditionalProperties: &structuralschema.StructuralOrBool{
			Bool:       true,
			Structural: &structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}},
		},
		ValidationExtensions: structuralschema.ValidationExtensions{XValidations: rules},
	}
	if len(rules) > 0 {
		v.cel = cel.NewValidator(v.structural, false, celconfig.PerCallLimit)
		if v.cel == nil {
			return nil, fmt.Errorf("CEL rules did not compile")
		}
		// NewValidator swallows compile errors into per-rule errors that
		// surface at validation: evaluate once on an empty object to fail
		// now instead.
		errs, _ := v.cel.Validate(context.Background(), field.NewPath("parameters"), v.structural, map[string]any{}, map[string]any{}, celconfig.RuntimeCELCostBudget)
		for _, e := range errs {
			if e.Type == field.ErrorTypeInternal || strings.Contains(e.Detail, "compilation failed") || strings.Contains(e.Detail, "compile") {
				return nil, fmt.Errorf("CEL rule: %s", e.Error())
			}
		}
	}
	return v, nil
}

// Validate validates parameters against the schema (CEL transition
// rules only when old is not nil). Every failing key is reported, under
// fldPath. Capability gating (the schema's x-buckety-capabilities) is the
// driver's to check: its ValidateParameters knows the backend's server
// type, says why it lacks the capability, and ratchets unchanged values.
func (v *Validator) Validate(ctx context.Context, fldPath *field.Path, params, old map[string]string) field.ErrorList {
	obj := toObject(params)
	errs := v.validateOpenAPI(fldPath, obj)
	if v.cel != nil {
		var oldObj any
		if old != nil {
			oldObj = toObject(old)
		}
		celErrs, _ := v.cel.Validate(ctx, fldPath, v.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	errs = keyed(fldPath, errs)
	return errs
}

// keyed rewrites error paths to name the parameter key, as
// spec.parameters[config.retention.ms], the way drivers report them: the
// OpenAPI validator writes keys as dotted paths (ambiguous for keys that
// contain dots) and reports an unknown key on the parent.
func keyed(fldPath *field.Path, errs field.ErrorList) field.ErrorList {
	prefix := fldPath.String()
	for _, e := range errs {
		switch {
		case strings.HasPrefix(e.Field, prefix+"."):
			key := strings.TrimPrefix(e.Field, prefix+".")
			if strings.HasPrefix(key, "[") && strings.HasSuffix(key, "]") {
				key = strings.Trim(key[1:len(key)-1], `'"`)
			}
			e.Field = fldPath.Key(key).String()
		case e.Field == prefix && strings.Contains(e.Detail, "forbidden property"):
			key := fmt.Sprint(e.BadValue)
			e.Field = fldPath.Key(key).String()
			e.Type = field.ErrorTypeNotSupported
			e.Detail = "not a parameter of this driver (see its parameters.schema.json)"
		}
	}
	return errs
}

// hoistPatterns takes the patternProperties of s's top level out of s,
// into v.patterns, when the rest of the top level judges each key alone:
// no count of keys (minProperties, maxProperties), no required key that
// only a pattern admits, no combinator (allOf, anyOf, oneOf, not) over
// the whole object. validateOpenAPI then gives the OpenAPI validator the
// keys a pattern does not take and each pattern the keys it matches:
// the same checks, at the same paths, as kube-openapi makes.
func (v *Validator) hoistPatterns(s *apiextensions.JSONSchemaProps) error {
	if len(s.PatternProperties) == 0 || s.MinProperties != nil || s.MaxProperties != nil ||
		len(s.AllOf) > 0 || len(s.AnyOf) > 0 || len(s.OneOf) > 0 || s.Not != nil {
		return nil
	}
	for _, k := range s.Required {
		if _, ok := s.Properties[k]; !ok {
			return nil
		}
	}
	for _, expr := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return fmt.Errorf("patternProperties %q: %w", expr, err)
		}
		sub := s.PatternProperties[expr]
		values, _, err := validation.NewSchemaValidator(&apiextensions.JSONSchemaProps{Type: "object",
			AdditionalProperties: &apiextensions.JSONSchemaPropsOrBool{Allows: true, Schema: &sub}})
		if err != nil {
			return fmt.Errorf("compile patternProperties %q: %w", expr, err)
		}
		v.patterns = append(v.patterns, pattern{re: re, values: values})
	}
	v.regular = make(map[string]bool, len(s.Properties))
	for k := range s.Properties {
		v.regular[k] = true
	}
	s.PatternProperties = nil
	return nil
}

// validateOpenAPI validates obj with the OpenAPI validator and the
// hoisted patterns. A key a pattern matches goes to that pattern; it goes
// to the OpenAPI validator too if it is a regular property, and only then
// (an unknown key no pattern matches stays there, to be refused).
func (v *Validator) validateOpenAPI(fldPath *field.Path, obj map[string]any) field.ErrorList {
	if len(v.patterns) == 0 {
		return validation.ValidateCustomResource(fldPath, obj, v.openapi)
	}
	rest := make(map[string]any, len(obj))
	matched := make([]map[string]any, len(v.patterns))
	for k, val := range obj {
		hit := false
		for i := range v.patterns {
			if v.patterns[i].re.MatchString(k) {
				if matched[i] == nil {
					matched[i] = map[string]any{}
				}
				matched[i][k], hit = val, true
			}
		}
		if !hit || v.regular[k] {
			rest[k] = val
		}
	}
	errs := validation.ValidateCustomResource(fldPath, rest, v.openapi)
	for i, m := range matched {
		if m == nil {
			continue
		}
		// Each error once, as kube-openapi reports one that a key's
		// property and pattern schemas both make.
		for _, e := range validation.ValidateCustomResource(fldPath, m, v.patterns[i].values) {
			if !slices.ContainsFunc(errs, func(r *field.Error) bool { return r.Error() == e.Error() }) {
				errs = append(errs, e)
			}
		}
	}
	return errs
}

func toObject(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
