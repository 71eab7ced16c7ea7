package s3

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/internal/paramschema"
)

// TestSchemaAgreesOnQuotasAndAnonymousRead: the published parameters
// schema (its pattern, enum, CEL rule and capability gates), as the
// webhook evaluates it, flags the same keys as the driver's Go validation
// for the quota, softQuota and anonymousRead parameters.
func TestSchemaAgreesOnQuotasAndAnonymousRead(t *testing.T) {
	v, err := paramschema.Compile(New().Schemas().Parameters)
	if err != nil {
		t.Fatal(err)
	}
	minio := &Config{Implementation: ImplMinIO, AllowAnonymousRead: true}
	for _, c := range []struct {
		name string
		cfg  *Config
		new  map[string]string
		want []string // flagged keys
	}{
		{"sizes", minio, map[string]string{"quota": "10Gi", "softQuota": "9G"}, nil},
		{"plain integer and exponent", minio, map[string]string{"quota": "1048576", "softQuota": "1e6"}, nil},
		{"fraction with a binary suffix", minio, map[string]string{"quota": "1.5Ki"}, nil},
		{"soft equals hard", minio, map[string]string{"quota": "1Gi", "softQuota": "1Gi"}, nil},
		{"soft above hard", minio, map[string]string{"quota": "1G", "softQuota": "1Gi"}, []string{"softQuota"}},
		{"soft alone", &Config{Implementation: ImplVersityGW}, map[string]string{"softQuota": "5Gi"}, nil},
		{"zero", minio, map[string]string{"quota": "0"}, []string{"quota"}},
		{"negative", minio, map[string]string{"quota": "-1Gi"}, []string{"quota"}},
		{"milli", minio, map[string]string{"softQuota": "100m"}, []string{"softQuota"}},
		{"words", minio, map[string]string{"quota": "ten gigs"}, []string{"quota"}},
		{"quota on versitygw", &Config{Implementation: ImplVersityGW}, map[string]string{"quota": "1Gi"}, []string{"quota"}},
		{"quota on seaweedfs", &Config{Implementation: ImplSeaweedFS}, map[string]string{"quota": "1Gi"}, nil},
		{"anonymous read", minio, map[string]string{"anonymousRead": "true"}, nil},
		{"anonymous read yes", minio, map[string]string{"anonymousRead": "yes"}, []string{"anonymousRead"}},
		{"anonymous read on aws", &Config{Implementation: ImplAWS}, map[string]string{"anonymousRead": "true"}, []string{"anonymousRead"}},
		// A YAML block scalar (lifecycle: |) holds the object over lines.
		{"lifecycle over lines", minio, map[string]string{"lifecycle": "{\n  \"expirationDays\": 30,\n  \"prefix\": \"logs/\"\n}\n"}, nil},
		{"lifecycle on one line", minio, map[string]string{"lifecycle": `{"expirationDays": 30}`}, nil},
		{"lifecycle not an object", minio, map[string]string{"lifecycle": "[30]"}, []string{"lifecycle"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := field.NewPath("spec", "parameters")
			schema := v.Validate(context.Background(), p, c.new, nil)
			_, driver := validateParams(p, c.cfg, nil, c.new)
			want := flagged(c.want)
			// Capability gating is the driver's alone: the schema only
			// publishes it.
			var schemaWant []string
			for _, k := range c.want {
				if _, gated := capabilityGated[k]; !gated || c.cfg.server().has(k) {
					schemaWant = append(schemaWant, k)
				}
			}
			if got := keysFlagged(schema); got != flagged(schemaWant) {
				t.Errorf("schema: want [%s] flagged, got [%s] (%v)", flagged(schemaWant), got, schema)
			}
			if got := keysFlagged(driver); got != want {
				t.Errorf("driver: want [%s] flagged, got [%s] (%v)", want, got, driver)
			}
		})
	}
}

func flagged(keys []string) string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = "spec.parameters[" + k + "]"
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func keysFlagged(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		if !slices.Contains(out, e.Field) {
			out = append(out, e.Field)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}
