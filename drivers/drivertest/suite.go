package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
)

// Suite is the conformance suite a driver runs from its own tests: fill it
// in and call Run. Every field but Driver is optional, and a part of the
// suite with nothing to check reports itself skipped, naming what it lacks.
//
// The suite checks the contract package drivers states:
//   - validation (validate.go): the driver's own cases for ValidateName,
//     ValidateParameters, ValidateAccess and its config's Validate, each
//     answered with the errors and warnings the case lists, and every error
//     at the path of the field it is about (spec.parameters[partitions]);
//   - the Secret keys (grant.go): the declaration is one the registry
//     accepts, and every Grant writes exactly the declared keys;
//   - the backend (contract.go), once per Service, against a real server:
//     Inspect of a missing resource; Ensure creates and reports Created once,
//     and a second Ensure makes no write; a dry run makes no write and lists
//     exactly the changes the real Ensure then makes; Inspect after content
//     was written reports it; Delete is idempotent and removes a resource
//     with content; Grant and Revoke (Revoke of a missing principal is
//     success); for a drivers.SeveralGranter, an access naming several
//     resources (several.go); and a stopped server is reported unavailable
//     within the request timeout.
//
// Extension points: a new part of the contract is a new subtest of
// RunService, fed by a new optional field of Service or Target; the
// drivers' suites keep compiling and gain it when they fill the field in.
// Per-access credentials are the first such part, prepared here
// (Target.UseCredentials; see credentials in grant.go).
type Suite struct {
	// Driver is the driver under test.
	Driver drivers.Driver

	// Names, Parameters, Accesses and Configs are the driver's validation
	// cases. They need no service, so they run with -short.
	Names      []NameCase
	Parameters []ParametersCase
	Accesses   []AccessCase
	Configs    []ConfigCase

	// Grants are accesses the suite grants on every Service's backend.
	Grants []GrantCase

	// Services are the real servers the backend contract runs against, each
	// as a subtest of its own (the s3 driver runs VersityGW and MinIO).
	Services []Service
}

// Service is one real server implementation a driver's backend is checked
// against, with the parameters that exercise it.
type Service struct {
	// Name names the subtest ("kfake", "minio").
	Name string
	// Open starts a server for t and opens a backend on it whose requests
	// time out after timeout; both end when t ends. A server that cannot
	// run under -short skips t.
	Open func(t *testing.T, timeout time.Duration) *Target

	// Params are the parameters the suite creates its resources with.
	Params map[string]string
	// CreateChange is the one change a dry run lists for a missing resource
	// with Params, with %s for the resource name; empty: any one change.
	CreateChange string
	// ContentDetail is a substring of Inspect's Detail for a resource that
	// Target.PutContent wrote to; empty: any non-empty detail.
	ContentDetail string
	// Steps take a resource created with Params through parameter changes,
	// in order, each of which makes Ensure write. At least one is needed.
	Steps []Step
	// Drift, when set, are parameters that a resource created with Params
	// differs from in a way Ensure reports and does not repair;
	// DriftParameter is the parameter its *drivers.DriftError names.
	Drift          map[string]string
	DriftParameter string
}

// Step is a change of parameters and what Ensure reports for it.
type Step struct {
	// Params are the new parameters.
	Params map[string]string
	// Changes are exactly the EnsureResult.Changes the change makes, in
	// order; nil: any non-empty list.
	Changes []string
}

// Target is a backend opened on a running server, and what the suite
// needs to observe the server besides the backend.
type Target struct {
	// Backend is the backend under test.
	Backend drivers.Backend
	// Requests counts what Backend sends to the server, and nothing else.
	Requests *Requests
	// PutContent writes content into an existing resource out of band, as a
	// consumer would, so that Inspect must report HasContent.
	PutContent func(t testing.TB, r drivers.Resource)
	// Snapshot, when set, reads what the server holds for a resource out of
	// band, as a comparable string; a dry run must leave it unchanged.
	Snapshot func(t testing.TB, r drivers.Resource) string
	// SecretData are the values every Grant on Backend writes (the
	// connection details); an empty value: any non-empty value.
	SecretData map[string]string
	// Stop, when set, stops the server; the backend must then answer with
	// *drivers.UnavailableError within the request timeout.
	Stop func() error
	// UseCredentials, when set, says that Grant creates a principal per
	// access, and tries one: it connects to the server with a Grant's
	// Secret data and uses a's resource as a's role allows, returning nil
	// when the server accepted and an error when it refused. Nil for a
	// driver that hands every access the backend's own credentials (every
	// driver in v1alpha1).
	UseCredentials func(ctx context.Context, a drivers.Access, data map[string][]byte) error
}

// Timeouts of the backends the suite opens: a generous one for the
// contract, a short one for the unavailability check, which waits for it.
const (
	contractTimeout    = 10 * time.Second
	unavailableTimeout = 2 * time.Second
)

// Run runs the whole suite as subtests of t.
func (s *Suite) Run(t *testing.T) {
	t.Run("validate", s.RunValidation)
	t.Run("secret-keys", s.runSecretKeys)
	if len(s.Services) == 0 {
		t.Run("backend", func(t *testing.T) { t.Skip("the suite names no Service to run the backend contract against") })
	}
	for _, svc := range s.Services {
		t.Run(svc.Name, func(t *testing.T) { s.RunService(t, svc) })
	}
}

// RunService runs the backend contract against one service: every subtest
// shares one server and backend (each on resources of its own), except the
// unavailability check, which stops its own.
func (s *Suite) RunService(t *testing.T, svc Service) {
	if len(svc.Steps) == 0 {
		t.Fatalf("service %s: want at least one Step, got none: the dry-run contract needs a parameter change", svc.Name)
	}
	c := &contract{suite: s, svc: svc, tg: svc.Open(t, contractTimeout)}
	t.Run("inspect-missing", c.inspectMissing)
	t.Run("ensure-creates-once", c.ensureCreatesOnce)
	t.Run("dry-run", c.dryRun)
	t.Run("drift", c.drift)
	t.Run("content", c.content)
	t.Run("delete", c.delete)
	t.Run("grant", c.grant)
	t.Run("revoke", c.revoke)
	t.Run("credentials", c.credentials)
	t.Run("several", c.several)
	t.Run("unavailable", func(t *testing.T) { unavailable(t, svc) })
}
