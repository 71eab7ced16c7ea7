package buckety

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
)

// TestEffectiveParameters: the status a provisioning pass writes holds
// spec.parameters merged over the backend defaults in effect
// (effectiveParameters, only the keys set), beside every default in effect
// (parameterDefaults, the overridden ones too), from the merge the pass
// gives the driver.
func TestEffectiveParameters(t *testing.T) {
	type m = map[string]string
	for _, c := range []struct {
		name string
		// the backend's parameters: and convergeParameters
		backend  m
		converge bool
		// the Buckety's spec.parameters, and the defaults its status
		// recorded when it was provisioned (provisioned: it was)
		spec, recorded m
		provisioned    bool
		// the claim's recorded location (the driver locates by region)
		location m
		// want status.effectiveParameters and status.parameterDefaults
		effective, defaults m
	}{
		{name: "nothing set: the field is left out"},
		{name: "an empty spec and no defaults", spec: m{}},
		{name: "no defaults: the spec", spec: m{"quota": "1Mi"}, effective: m{"quota": "1Mi"}},
		{name: "a new Buckety that sets nothing: the defaults", backend: m{"quota": "1Mi", "versioning": "true"},
			effective: m{"quota": "1Mi", "versioning": "true"}, defaults: m{"quota": "1Mi", "versioning": "true"}},
		{name: "the spec wins over a default, which stays recorded", backend: m{"quota": "1Mi", "versioning": "true"}, spec: m{"quota": "2Mi", "anonymousRead": "true"},
			effective: m{"quota": "2Mi", "versioning": "true", "anonymousRead": "true"}, defaults: m{"quota": "1Mi", "versioning": "true"}},
		{name: "a changed default does not reach a provisioned Buckety", backend: m{"config.retention.ms": "7200000"},
			recorded: m{"config.retention.ms": "3600000"}, provisioned: true,
			effective: m{"config.retention.ms": "3600000"}, defaults: m{"config.retention.ms": "3600000"}},
		{name: "a converging backend's changed default does", backend: m{"config.retention.ms": "7200000"}, converge: true,
			recorded: m{"config.retention.ms": "3600000"}, provisioned: true,
			effective: m{"config.retention.ms": "7200000"}, defaults: m{"config.retention.ms": "7200000"}},
		{name: "a removed override falls back to the recorded default", backend: m{"quota": "8Mi"},
			spec: m{"versioning": "true"}, recorded: m{"quota": "1Mi"}, provisioned: true,
			effective: m{"quota": "1Mi", "versioning": "true"}, defaults: m{"quota": "1Mi"}},
		{name: "the location as the claim recorded it", backend: m{"region": "eu"}, location: m{"region": "eu"},
			effective: m{"region": "eu"}, defaults: m{"region": "eu"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &backends.Entry{Name: "objects", Driver: &drivertest.Driver{Locate: []string{"region"}},
				Config: &config.Backend{Name: "objects", Parameters: c.backend, ConvergeParameters: c.converge}}
			b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "files", Generation: 1},
				Spec:   v1.BucketySpec{Backend: "objects", Parameters: maps.Clone(c.spec)},
				Status: v1.BucketyStatus{ParameterDefaults: c.recorded, BackendResourceName: "team-files"}}
			if c.provisioned {
				b.Status.Provenance = v1.ProvenanceCreated
			}
			cl := &v1.BucketyClaim{Spec: v1.BucketyClaimSpec{ResourceName: "team-files", Phase: v1.ClaimCreated, Location: c.location}}
			f := &facts{resourceName: "team-files"}
			mergeDefaults(e, b, f)
			// As provision does: the claim's location, then the status.
			f.params = backendResource(e, f.resourceName, f.params, cl).Parameters
			(&Reconciler{}).mirrorClaim(b, e, cl, nil, false, f)

			if got := b.Status.EffectiveParameters; !maps.Equal(got, c.effective) || (c.effective == nil) != (got == nil) {
				t.Errorf("status.effectiveParameters: want %v, got %v", c.effective, got)
			}
			if got := b.Status.ParameterDefaults; !maps.Equal(got, c.defaults) {
				t.Errorf("status.parameterDefaults: want %v, got %v", c.defaults, got)
			}
			// The status shares no map with the spec: a later edit of one
			// is not an edit of the other.
			if b.Spec.Parameters != nil {
				b.Spec.Parameters["quota"] = "99Mi"
				if got := b.Status.EffectiveParameters["quota"]; got == "99Mi" {
					t.Errorf("status.effectiveParameters shares its map with spec.parameters")
				}
			}
		})
	}
}

// gatedDriver refuses the parameter "gated" as a driver refuses one its
// backend's config no longer allows (s3's anonymousRead without
// allowAnonymousRead): unless it is unchanged from old, which it warns
// of.
type gatedDriver struct{ drivertest.Driver }

func (d *gatedDriver) ValidateParameters(p *field.Path, _ drivers.Config, old, new map[string]string) ([]string, field.ErrorList) {
	v, ok := new["gated"]
	switch {
	case !ok:
		return nil, nil
	case old != nil && old["gated"] == v:
		return []string{"gated: kept because it is unchanged"}, nil
	}
	return nil, field.ErrorList{field.Forbidden(p.Key("gated"), "the backend no longer allows it")}
}

// TestWithdrawnParameterOfAProvisionedBuckety: a provisioned Buckety
// whose parameter its backend's config no longer allows is validated as
// admission validates an unchanged value (kept, with a warning), so its
// Ensure runs and undoes what it can (a withdrawn anonymous read's
// statement is removed, with a shortfall); refused, no Ensure ran, and
// the bucket stayed public. A Buckety not yet provisioned is refused it.
func TestWithdrawnParameterOfAProvisionedBuckety(t *testing.T) {
	e := &backends.Entry{Name: "objects", Driver: &gatedDriver{}, Config: &config.Backend{Name: "objects"}}
	for _, provisioned := range []bool{true, false} {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "files", Generation: 2},
			Spec: v1.BucketySpec{Backend: "objects", Parameters: map[string]string{"gated": "true"}}}
		if provisioned {
			b.Status.Provenance = v1.ProvenanceCreated
		}
		f := &facts{}
		ok := (&Reconciler{}).validateParameters(b, e, f)
		if ok != provisioned {
			t.Errorf("provisioned %v: want valid %v, got %v (%s)", provisioned, provisioned, ok, f.invalidParams)
		}
	}
}
