package paramschema

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/invopop/jsonschema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers/all"
)

// TestHoistedPatternsKeepVerdicts: with the top level's patternProperties
// validated by Validate itself (compiled once), every driver's parameters
// and access parameters schemas, and schemas that mix regular properties,
// patterns and additionalProperties, give exactly the errors kube-openapi
// gives with the patterns left in the schema.
func TestHoistedPatternsKeepVerdicts(t *testing.T) {
	schemas := map[string]*jsonschema.Schema{}
	reg := all.Registry()
	for _, n := range reg.Names() {
		d, _ := reg.Get(n)
		schemas[n+" parameters"] = d.Schemas().Parameters
		schemas[n+" access parameters"] = d.Schemas().AccessParameters
	}
	num := &jsonschema.Schema{Type: "string", Pattern: "^[0-9]+$", MaxLength: ptr(uint64(4))}
	for name, extra := range map[string]func(*jsonschema.Schema){
		"closed": func(*jsonschema.Schema) {},
		"additional schema": func(s *jsonschema.Schema) {
			s.AdditionalProperties = &jsonschema.Schema{Type: "string", Enum: []any{"on", "off"}}
		},
		"open":                    func(s *jsonschema.Schema) { s.AdditionalProperties = nil },
		"maxProperties (kept)":    func(s *jsonschema.Schema) { s.MaxProperties = ptr(uint64(2)) },
		"required pattern (kept)": func(s *jsonschema.Schema) { s.Required = []string{"config.x"} },
	} {
		props := jsonschema.NewProperties()
		props.Set("partitions", num)
		props.Set("config.retention.ms", &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(2))})
		s := &jsonschema.Schema{Type: "object", Properties: props, AdditionalProperties: jsonschema.FalseSchema,
			PatternProperties: map[string]*jsonschema.Schema{`^config\.[a-z.]+$`: num, `^config\.r`: {Type: "string", Enum: []any{"1", "12", "delete"}}}}
		extra(s)
		schemas["synthetic "+name] = s
	}
	keys := []string{"partitions", "replicationFactor", "config.retention.ms", "config.cleanup.policy", "config.num.partitions", "config.Retention",
		"config.", "config.x", "topic.orders", "bucket.x", "region", "versioning", "lifecycle", "jurisdiction", "role", "unknown", ""}
	values := []string{"", "0", "3", "12", "many", "true", "delete", "-1", `{"expirationDays": 1}`}
	var inputs []map[string]string
	for _, k := range keys {
		for _, val := range values {
			inputs = append(inputs, map[string]string{k: val})
		}
	}
	for i := range values {
		m := map[string]string{}
		for j, k := range keys {
			m[k] = values[(i+j)%len(values)]
		}
		inputs = append(inputs, m, map[string]string{"partitions": values[i], "config.retention.ms": values[len(values)-1-i], "config.x": values[i]})
	}
	p := field.NewPath("spec", "parameters")
	for name, s := range schemas {
		hoisted, err := compile(s, true)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plain, err := compile(s, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, in := range inputs {
			got, want := errorSet(hoisted.Validate(context.Background(), p, in, nil)), errorSet(plain.Validate(context.Background(), p, in, nil))
			if !slices.Equal(got, want) {
				t.Errorf("%s, %v: want %q, got %q", name, in, want, got)
			}
		}
	}
}

func errorSet(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s|%s|%v", e.Type, e.Error(), e.BadValue))
	}
	slices.Sort(out)
	return out
}

func ptr[T any](v T) *T { return &v }
