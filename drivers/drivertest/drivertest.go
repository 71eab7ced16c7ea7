package drivertest

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/invopop/jsonschema"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// Driver is a test driver; Named sets the name it registers under.
type Driver struct {
	Named string
	// Locate, when set, are the driver's location parameters
	// (drivers.Locator).
	Locate []string
	// Ver is the version reported; zero means 0.1.0.
	Ver drivers.Version
	// Service, when set, is what Open returns.
	Service *Backend
	// Keys, when set, is what SecretKeys returns instead of the keys the
	// in-memory Backend's Grant writes.
	Keys []drivers.SecretKey
}

// Config is the test driver's options: one required field, one credential.
type Config struct {
	// Endpoint is required.
	Endpoint string `json:"endpoint"`
	// Token is a credential, substituted from the environment.
	Token string `json:"token,omitempty" envsubst:"true" credential:"true"`
	// Limit must be non-negative.
	Limit int `json:"limit,omitempty"`
}

// Validate implements drivers.Config.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Endpoint == "" {
		errs = append(errs, field.Required(p.Child("endpoint"), "the test service's address"))
	}
	if c.Limit < 0 {
		errs = append(errs, field.Invalid(p.Child("limit"), c.Limit, "must be >= 0"))
	}
	return errs
}

// Name implements drivers.Driver.
func (d *Driver) Name() string {
	if d.Named == "" {
		return "test"
	}
	return d.Named
}

// Version implements drivers.Driver.
func (d *Driver) Version() drivers.Version {
	if d.Ver == (drivers.Version{}) {
		return drivers.Version{Minor: 1}
	}
	return d.Ver
}

// NewConfig implements drivers.Driver.
func (d *Driver) NewConfig() drivers.Config { return &Config{} }

// ValidateName accepts lowercase letters, digits, '-' and '.', at most 20
// bytes.
func (d *Driver) ValidateName(p *field.Path, _ drivers.Config, name string) ([]string, field.ErrorList) {
	if len(name) == 0 || len(name) > 20 {
		return nil, field.ErrorList{field.Invalid(p, name, "must be 1 to 20 characters")}
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return nil, field.ErrorList{field.Invalid(p, name, "only lowercase letters, digits, '-' and '.'")}
		}
	}
	return nil, nil
}

// ValidateParameters accepts "size" (a positive integer, immutable).
func (d *Driver) ValidateParameters(p *field.Path, _ drivers.Config, old, new map[string]string) ([]string, field.ErrorList) {
	var errs field.ErrorList
	for k, v := range new {
		if slices.Contains(d.Locate, k) {
			continue // location parameters take any value
		}
		if k != "size" {
			errs = append(errs, field.NotSupported(p.Key(k), k, []string{"size"}))
			continue
		}
		if n, err := strconv.Atoi(v); err != nil || n <= 0 {
			errs = append(errs, field.Invalid(p.Key(k), v, "must be a positive integer"))
		}
	}
	if old != nil && old["size"] != new["size"] {
		errs = append(errs, field.Forbidden(p.Key("size"), "is immutable"))
	}
	return nil, errs
}

// ValidateAccess accepts every role, warning for anything but ReadWrite.
func (d *Driver) ValidateAccess(_ *field.Path, _ drivers.Config, role drivers.Role, _ map[string]string) ([]string, field.ErrorList) {
	if role != drivers.RoleReadWrite {
		return []string{"role " + string(role) + " is not enforced"}, nil
	}
	return nil, nil
}

// Schemas implements drivers.Driver: "size" is a positive integer string
// that cannot change.
func (d *Driver) Schemas() drivers.Schemas {
	params := jsonschema.NewProperties()
	params.Set("size", &jsonschema.Schema{Type: "string", Pattern: "^[1-9][0-9]*$"})
	return drivers.Schemas{
		Parameters: &jsonschema.Schema{Type: "object", Properties: params, AdditionalProperties: jsonschema.FalseSchema,
			Extras: map[string]any{"x-kubernetes-validations": []map[string]string{{"rule": "has(self.size) == has(oldSelf.size) && (!has(self.size) || self.size == oldSelf.size)", "message": "size is immutable"}}}},
		AccessParameters: &jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.FalseSchema},
	}
}

// SecretKeys implements drivers.Driver: the keys the in-memory Backend's
// Grant returns.
func (d *Driver) SecretKeys() []drivers.SecretKey {
	if d.Keys != nil {
		return d.Keys
	}
	return []drivers.SecretKey{
		{Name: "endpoint", Description: "Always test://service."},
		{Name: "resource", Description: "The resource name."},
	}
}

// Open returns the test's Service; without one it fails.
func (d *Driver) Open(context.Context, string, drivers.Config) (drivers.Backend, error) {
	if d.Service == nil {
		return nil, errors.New("drivertest: no service to open")
	}
	return d.Service, nil
}

// ServiceAddresses implements drivers.ServiceAddresser: the endpoint.
func (c *Config) ServiceAddresses() []string {
	if c.Endpoint == "" {
		return nil
	}
	return []string{c.Endpoint}
}

// LocationParameters implements drivers.Locator: Locate.
func (d *Driver) LocationParameters() []string { return d.Locate }
