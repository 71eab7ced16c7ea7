// Package backends holds the controller's open connections: one
// drivers.Backend per backend in buckety-controller.yaml, opened at start-up
// and reused for the life of the process, each instrumented with metrics.
package backends

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

// Entry is one configured, opened backend.
type Entry struct {
	// Name is the backend's name in the config.
	Name string
	// Config is the backend's config entry (defaults, options).
	Config *config.Backend
	// Driver is the backend's driver.
	Driver drivers.Driver
	// Backend is the open connection.
	Backend drivers.Backend
	// Sweeper is the same connection's drift sweep, instrumented; nil when
	// the driver has none.
	Sweeper drivers.Sweeper
	// Issuer is the same connection's per-access credentials,
	// instrumented; nil when the driver has none.
	Issuer drivers.CredentialIssuer
	// CredentialSweeper is the same connection's credential drift sweep,
	// instrumented; nil when the driver has none.
	CredentialSweeper drivers.CredentialSweeper
	// Usage is the same connection's usage measurement, instrumented; nil
	// when the driver has none.
	Usage drivers.UsageReporter
	// Drainer is the same connection's drain, instrumented; nil when the
	// driver cannot drain.
	Drainer drivers.Drainer
	// Owners is the same connection's owner records, instrumented; nil
	// when the driver keeps none.
	Owners drivers.OwnerRecorder
	// Principals lists the same connection's principals by installation;
	// nil when the driver cannot.
	Principals drivers.PrincipalLister
	// Prober is the same connection's health probe, instrumented; nil
	// when the driver has none. It is a drivers.Warner too, with no
	// warning from a driver that has none.
	Prober drivers.Prober
	// Implementation names the software behind the backend
	// (drivers.Implementer), "" when the driver or the config does not say.
	Implementation string
}

// Set is every opened backend.
type Set struct {
	cfg          *config.Config
	entries      map[string]*Entry
	installation string
	// aware are the opened backends that are told the installation
	// (drivers.InstallationAware).
	aware []drivers.InstallationAware
}

// Open opens every backend of cfg. Drivers do not dial in Open, so an
// unreachable backend does not stop the controller from starting.
func Open(ctx context.Context, cfg *config.Config) (*Set, error) {
	s := &Set{cfg: cfg, entries: map[string]*Entry{}, installation: cfg.Installation}
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		be, err := b.DriverImpl().Open(ctx, b.Name, b.Options())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("open backend %s: %w", b.Name, err), s.Close())
		}
		if ia, ok := be.(drivers.InstallationAware); ok {
			s.aware = append(s.aware, ia)
		}
		in := &instrumented{Backend: be, backend: b.Name, driver: b.Driver}
		e := &Entry{Name: b.Name, Config: b, Driver: b.DriverImpl(), Backend: in}
		if sw, ok := be.(drivers.Sweeper); ok {
			e.Sweeper = &instrumentedSweeper{Sweeper: sw, in: in}
		}
		if sc, ok := be.(drivers.CredentialIssuer); ok {
			e.Issuer = &instrumentedIssuer{CredentialIssuer: sc, in: in}
		}
		if cs, ok := be.(drivers.CredentialSweeper); ok {
			e.CredentialSweeper = &instrumentedCredentialSweeper{CredentialSweeper: cs, in: in}
		}
		if u, ok := be.(drivers.UsageReporter); ok {
			e.Usage = &instrumentedUsage{UsageReporter: u, in: in}
		}
		if d, ok := be.(drivers.Drainer); ok {
			e.Drainer = &instrumentedDrainer{Drainer: d, in: in}
		}
		if o, ok := be.(drivers.OwnerRecorder); ok {
			e.Owners = &instrumentedOwners{OwnerRecorder: o, in: in}
		}
		if pl, ok := be.(drivers.PrincipalLister); ok {
			e.Principals = &instrumentedPrincipals{PrincipalLister: pl, in: in}
		}
		if p, ok := be.(drivers.Prober); ok {
			e.Prober = &instrumentedProber{Prober: p, in: in}
		}
		if im, ok := be.(drivers.Implementer); ok {
			e.Implementation = im.Implementation()
		}
		s.entries[b.Name] = e
	}
	if s.installation != "" {
		s.tellInstallation()
	}
	return s, nil
}

// Installation is the installation's name: the config's, or the default
// the controller derived from its cluster (SetInstallation).
func (s *Set) Installation() string { return s.installation }

// FormerInstallations are names this installation had before
// (formerInstallations in the config): owner records and principals under
// them are its own.
func (s *Set) FormerInstallations() []string { return s.cfg.FormerInstallations }

// SetInstallation sets the name Installation returns, and tells the
// backends that keep records of their own (drivers.InstallationAware); the
// controller calls it once, before its reconcilers start, when the config
// names no installation (Open tells the config's).
func (s *Set) SetInstallation(name string) {
	s.installation = name
	s.tellInstallation()
}

// tellInstallation tells every backend that asks the installation's
// current and former names.
func (s *Set) tellInstallation() {
	for _, ia := range s.aware {
		ia.SetInstallation(s.installation, s.cfg.FormerInstallations)
	}
}

// Entries lists the open backends, in file order.
func (s *Set) Entries() []*Entry {
	var es []*Entry
	for _, n := range s.Names() {
		es = append(es, s.entries[n])
	}
	return es
}

// Get returns the backend named name.
func (s *Set) Get(name string) (*Entry, bool) {
	e, ok := s.entries[name]
	return e, ok
}

// ScopeMembers lists the backends whose claims share the claim space
// scope (config.Config.ScopeMembers).
func (s *Set) ScopeMembers(scope string) []string { return s.cfg.ScopeMembers(scope) }

// Names lists the configured backends, in file order.
func (s *Set) Names() []string { return s.cfg.BackendNames() }

// Close closes every backend.
func (s *Set) Close() error {
	var errs []error
	for _, e := range s.entries {
		if err := e.Backend.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// instrumented records latency and errors of every operation.
type instrumented struct {
	drivers.Backend
	backend, driver string
}

func (i *instrumented) observe(op string, start time.Time, err error) {
	metrics.BackendRequestDuration.WithLabelValues(i.backend, i.driver, op).Observe(time.Since(start).Seconds())
	if err != nil {
		metrics.BackendRequestErrors.WithLabelValues(i.backend, i.driver, op, string(Classify(err))).Inc()
	}
}

// Class is how a driver error is handled: it decides the condition reason,
// the retry backoff and the metric label.
type Class string

// Error classes; the string is the metrics label.
const (
	// ClassNone: no error.
	ClassNone Class = ""
	// ClassUnavailable: the backend could not be reached or timed out.
	ClassUnavailable Class = "unavailable"
	// ClassAccessDenied: the backend refused the controller's credentials
	// or permissions.
	ClassAccessDenied Class = "access_denied"
	// ClassDrift: drift the driver will not repair.
	ClassDrift Class = "drift"
	// ClassInProgress: more work remains (a bucket emptied in slices).
	ClassInProgress Class = "in_progress"
	// ClassRequest: the backend answered with an error.
	ClassRequest Class = "request"
)

// Classify classifies a driver error.
func Classify(err error) Class {
	var drift *drivers.DriftError
	var ip *drivers.InProgressError
	switch {
	case err == nil:
		return ClassNone
	case drivers.IsUnavailable(err):
		return ClassUnavailable
	case drivers.IsAccessDenied(err):
		return ClassAccessDenied
	case errors.As(err, &drift):
		return ClassDrift
	case errors.As(err, &ip):
		return ClassInProgress
	}
	return ClassRequest
}

func (i *instrumented) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	start := time.Now()
	in, err := i.Backend.Inspect(ctx, r)
	i.observe("inspect", start, err)
	return in, err
}

func (i *instrumented) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	start := time.Now()
	res, err := i.Backend.Ensure(ctx, r)
	i.observe("ensure", start, err)
	return res, err
}

func (i *instrumented) Delete(ctx context.Context, r drivers.Resource) error {
	start := time.Now()
	err := i.Backend.Delete(ctx, r)
	i.observe("delete", start, err)
	return err
}

func (i *instrumented) Grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	start := time.Now()
	g, err := i.Backend.Grant(ctx, a)
	i.observe("grant", start, err)
	return g, err
}

func (i *instrumented) Revoke(ctx context.Context, a drivers.Access) error {
	start := time.Now()
	err := i.Backend.Revoke(ctx, a)
	i.observe("revoke", start, err)
	return err
}

// instrumentedSweeper records a sweep's latency and failure like the other
// operations, as operation "sweep".
type instrumentedSweeper struct {
	drivers.Sweeper
	in *instrumented
}

func (i *instrumentedSweeper) Sweep(ctx context.Context, rs []drivers.Resource) ([]drivers.SweepVerdict, error) {
	start := time.Now()
	v, err := i.Sweeper.Sweep(ctx, rs)
	i.in.observe("sweep", start, err)
	return v, err
}

// instrumentedIssuer records the Issuing probe and principal inspections
// as operations "scoping" (the label value kept from before) and
// "inspect-principal".
type instrumentedIssuer struct {
	drivers.CredentialIssuer
	in *instrumented
}

func (i *instrumentedIssuer) Issuing(ctx context.Context) (drivers.Issuing, error) {
	start := time.Now()
	s, err := i.CredentialIssuer.Issuing(ctx)
	i.in.observe("scoping", start, err)
	return s, err
}

func (i *instrumentedIssuer) InspectPrincipal(ctx context.Context, principal string) (bool, error) {
	start := time.Now()
	ok, err := i.CredentialIssuer.InspectPrincipal(ctx, principal)
	i.in.observe("inspect-principal", start, err)
	return ok, err
}

// instrumentedCredentialSweeper records a credential sweep as operation
// "sweep-credentials".
type instrumentedCredentialSweeper struct {
	drivers.CredentialSweeper
	in *instrumented
}

func (i *instrumentedCredentialSweeper) SweepCredentials(ctx context.Context, as []drivers.Access) ([]int, error) {
	start := time.Now()
	d, err := i.CredentialSweeper.SweepCredentials(ctx, as)
	i.in.observe("sweep-credentials", start, err)
	return d, err
}

// instrumentedDrainer records a drain step as operation "drain".
type instrumentedDrainer struct {
	drivers.Drainer
	in *instrumented
}

func (i *instrumentedDrainer) Drain(ctx context.Context, r drivers.Resource, l drivers.DrainLimits) (drivers.DrainStep, error) {
	start := time.Now()
	s, err := i.Drainer.Drain(ctx, r, l)
	i.in.observe("drain", start, err)
	return s, err
}

// instrumentedUsage records a usage measurement as operation "usage".
type instrumentedUsage struct {
	drivers.UsageReporter
	in *instrumented
}

func (i *instrumentedUsage) Usage(ctx context.Context, rs []drivers.Resource) ([]drivers.Usage, error) {
	start := time.Now()
	u, err := i.UsageReporter.Usage(ctx, rs)
	i.in.observe("usage", start, err)
	return u, err
}

// NewSecret passes drivers.SecretMaker through to the backend, which the
// wrapper would hide: "" when the backend makes none.
func (i *instrumentedIssuer) NewSecret() (string, error) {
	if m, ok := i.CredentialIssuer.(drivers.SecretMaker); ok {
		return m.NewSecret()
	}
	return "", nil
}

// ServiceID passes drivers.ServiceIdentifier through to the backend,
// which the wrapper would hide: "" for a backend that cannot tell.
func (i *instrumented) ServiceID(ctx context.Context) (string, error) {
	return drivers.ServiceIDOf(ctx, i.Backend)
}

// SecretFrom passes drivers.IssuedSecrets through to the backend, which
// the wrapper would hide.
func (i *instrumentedIssuer) SecretFrom(principal string, data map[string][]byte) string {
	return drivers.SecretOf(i.CredentialIssuer, principal, data)
}

// SecretStale passes drivers.StaleSecrets through to the backend, which
// the wrapper would hide.
func (i *instrumentedIssuer) SecretStale(data map[string][]byte) bool {
	return drivers.SecretStale(i.CredentialIssuer, data)
}

// instrumentedOwners records owner-record reads and writes as operations
// "read_owner" and "write_owner".
type instrumentedOwners struct {
	drivers.OwnerRecorder
	in *instrumented
}

func (i *instrumentedOwners) ReadOwner(ctx context.Context, r drivers.Resource) (*drivers.OwnerRecord, error) {
	start := time.Now()
	o, err := i.OwnerRecorder.ReadOwner(ctx, r)
	i.in.observe("read_owner", start, err)
	return o, err
}

func (i *instrumentedOwners) WriteOwner(ctx context.Context, r drivers.Resource, rec *drivers.OwnerRecord) error {
	start := time.Now()
	err := i.OwnerRecorder.WriteOwner(ctx, r, rec)
	i.in.observe("write_owner", start, err)
	return err
}

// OwnerRecordsOutliveResources passes drivers.OwnerRegistry through to the
// backend, which the wrapper would hide.
func (i *instrumentedOwners) OwnerRecordsOutliveResources() bool {
	r, ok := i.OwnerRecorder.(drivers.OwnerRegistry)
	return ok && r.OwnerRecordsOutliveResources()
}

// CatchUpRegistry passes drivers.RegistryEpochs through to the backend,
// which the wrapper would hide; a backend without a registry has nothing
// to catch up.
func (i *instrumentedOwners) CatchUpRegistry(ctx context.Context, maxAge time.Duration) error {
	if r, ok := i.OwnerRecorder.(drivers.RegistryEpochs); ok {
		return r.CatchUpRegistry(ctx, maxAge)
	}
	return nil
}

// RegistryEpoch passes drivers.RegistryEpochs through: 0 for a backend
// without a registry.
func (i *instrumentedOwners) RegistryEpoch() uint64 {
	if r, ok := i.OwnerRecorder.(drivers.RegistryEpochs); ok {
		return r.RegistryEpoch()
	}
	return 0
}

// instrumentedPrincipals records a listing as operation "list_principals".
type instrumentedPrincipals struct {
	drivers.PrincipalLister
	in *instrumented
}

func (i *instrumentedPrincipals) ListPrincipals(ctx context.Context, installation string) ([]string, error) {
	start := time.Now()
	ps, err := i.PrincipalLister.ListPrincipals(ctx, installation)
	i.in.observe("list_principals", start, err)
	return ps, err
}

// instrumentedProber records a probe as operation "probe".
type instrumentedProber struct {
	drivers.Prober
	in *instrumented
}

func (i *instrumentedProber) Probe(ctx context.Context) error {
	start := time.Now()
	err := i.Prober.Probe(ctx)
	i.in.observe("probe", start, err)
	return err
}

// ProbeWarnings passes drivers.Warner through to the backend, which the
// wrapper would hide: none for a backend that cannot warn.
func (i *instrumentedProber) ProbeWarnings() []drivers.Warning {
	if w, ok := i.Prober.(drivers.Warner); ok {
		return w.ProbeWarnings()
	}
	return nil
}
