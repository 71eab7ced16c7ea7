package drivers

import (
	"context"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Driver describes one kind of backing service.
type Driver interface {
	// Name is the stable name used as `driver:` in buckety-controller.yaml.
	// It never changes once released.
	Name() string
	// Version is the driver's SemVer. Its major is stamped on resources as
	// status.driverMajor and gates compatibility.
	Version() Version
	// NewConfig returns a pointer to a new, zero options value. A backend's
	// `config:` block is decoded strictly into it, environment substitution
	// is applied to its fields tagged `envsubst:"true"`, and then its Validate
	// is called. When the config is loaded for validation only (the
	// admission webhook, which has no environment and none of the
	// controller's files), fields tagged `credential:"true"` (secrets) and
	// `file:"true"` (paths of files mounted into the controller) are
	// cleared, tagged fields that reference a variable are cleared, and
	// Validate's errors on any of them are dropped: Validate must therefore
	// accept those fields empty, and read files only through file-tagged
	// fields.
	NewConfig() Config

	// ValidateName checks a resolved backend resource name against the
	// service's naming rules. Warnings do not reject the name.
	ValidateName(fldPath *field.Path, cfg Config, name string) (warnings []string, errs field.ErrorList)
	// ValidateParameters checks spec.parameters. old is nil on create; on
	// update it holds the previous parameters so immutable keys can be
	// enforced. Errors name the key, as fldPath.Key(key).
	ValidateParameters(fldPath *field.Path, cfg Config, old, new map[string]string) (warnings []string, errs field.ErrorList)
	// ValidateAccess checks a BucketyAccess role and parameters. Values the
	// driver accepts but does not enforce yet are accepted with a warning.
	ValidateAccess(fldPath *field.Path, cfg Config, role Role, params map[string]string) (warnings []string, errs field.ErrorList)

	// Schemas describes spec.parameters of a Buckety and of a BucketyAccess
	// as JSON schemas. CEL rules in x-kubernetes-validations (with oldSelf
	// for immutability) carry what a schema cannot. The release tool
	// publishes them; the admission webhook evaluates them.
	Schemas() Schemas
	// SecretKeys declares the keys of the Secret that Grant returns: each
	// key's meaning and whether every Secret has it. Grant returns no other
	// key. The release tool publishes the declaration as the driver's
	// secret schema.
	SecretKeys() []SecretKey

	// Open connects a backend. The returned Backend is long-lived and safe for
	// concurrent use; the caller closes it at shutdown. Open must not block on
	// the network: an unreachable service surfaces as UnavailableError from
	// the operations.
	Open(ctx context.Context, backend string, cfg Config) (Backend, error)
}

// Schemas are a driver's published JSON schemas, besides its config schema,
// which is reflected from the type NewConfig returns.
type Schemas struct {
	// Parameters describes Buckety.spec.parameters.
	Parameters *jsonschema.Schema
	// AccessParameters describes BucketyAccess.spec.parameters.
	AccessParameters *jsonschema.Schema
}

// Config is a driver's options type, decoded from a backend's `config:` block.
type Config interface {
	// Validate checks required fields and values. Paths are relative to the
	// config block, as field.NewPath("seedBrokers"). Credential fields are
	// checked by the loader, not here.
	Validate(fldPath *field.Path) field.ErrorList
}

// Noticer is implemented by a Config that infers a setting its file does
// not state, from an older spelling, so that configs written before the
// setting existed keep their behaviour. Notices returns one line per
// inference, without the backend's name; the controller and the webhook
// log each once at startup, prefixed with the backend.
type Noticer interface {
	Notices() []string
}

// Backend is a connected backing-service instance. Every method is
// idempotent.
type Backend interface {
	// Inspect reports whether a resource exists and holds content, so that a
	// pre-existing resource is never claimed silently. A driver that cannot
	// tell whether there is content reports HasContent true. It gets the
	// same Resource as Ensure, so that it looks where Ensure would create
	// (an R2 bucket's jurisdiction has its own endpoint).
	Inspect(ctx context.Context, r Resource) (Inspection, error)
	// Ensure creates the resource or reconciles it to the parameters,
	// repairing drift where the service allows. Drift it cannot repair is a
	// *DriftError. A call that finds nothing to change makes no write. With
	// Resource.DryRun it makes no write at all: it reads the resource and
	// returns, in Changes, the writes it would have made (and any
	// *DriftError), so the controller can report them before applying.
	Ensure(ctx context.Context, r Resource) (EnsureResult, error)
	// Delete removes the resource; a missing resource is success. When more
	// work remains (a large bucket is emptied in slices) it returns an
	// *InProgressError and the caller calls again. Like Inspect, it gets the
	// Resource's parameters, to reach the resource where Ensure created it.
	Delete(ctx context.Context, r Resource) error
	// Grant returns the Secret payload for one access, as flat keys.
	Grant(ctx context.Context, a Access) (Grant, error)
	// Revoke removes what Grant created on the service; a missing principal
	// is success.
	Revoke(ctx context.Context, a Access) error
	// Close releases connections.
	Close() error
}

// Role is what an access may do with its resource: BucketyAccess
// spec.role, as the drivers see it.
type Role string

// The roles, as the API spells them.
const (
	RoleReadWrite Role = "ReadWrite"
	RoleReadOnly  Role = "ReadOnly"
	RoleWriteOnly Role = "WriteOnly"
)

// OrDefault is r, or ReadWrite (the API's default) when r is empty.
func (r Role) OrDefault() Role {
	if r == "" {
		return RoleReadWrite
	}
	return r
}

// Resource is the desired state of one backend resource.
type Resource struct {
	// Name is the resolved backend resource name (topic, bucket).
	Name string
	// Parameters are the Buckety's spec.parameters.
	Parameters map[string]string
	// DryRun makes Ensure compare without writing (see Backend.Ensure). The
	// other operations ignore it.
	DryRun bool
	// CreateOnly makes Ensure create the resource when it is missing and
	// write nothing to it when it exists: a resource that appears between
	// the adoption check and the create is someone else's, and is not
	// converged (EnsureResult.Created tells which happened). Delete and
	// Inspect ignore it.
	CreateOnly bool
	// BeforeWrite, when set, is called once, before the first write Ensure
	// makes (a create, a repair, a parameter change), and Ensure writes
	// nothing when it fails, returning its error. The controller confirms
	// there, with a fresh read, that it still owns the resource: a claim
	// seen in a lagging cache must not re-create a resource just deleted,
	// or push stale parameters onto its next owner. Not called when Ensure
	// writes nothing.
	BeforeWrite func(ctx context.Context) error
	// MaxAge lets Ensure answer from what the backend itself saw of the
	// resource within MaxAge (its own reads, sweeps and writes) instead of
	// reading it again, when what it saw needs no write. What it saw is
	// never acted on otherwise: a resource that differs is read again before
	// anything is written, and a dry run always reads. 0: read it now.
	// Drivers that keep no observations ignore it. The controller passes
	// its drift sweep interval on backends whose sweep is complete: the
	// sweep already bounds how long drift goes unseen, and a read younger
	// than one interval adds nothing to that bound. The other operations
	// ignore it.
	MaxAge time.Duration
	// JustCreated tells WriteOwner that Ensure reported the resource
	// created (EnsureResult.Created) in this same pass: it held nothing of
	// anyone else's when it was made, so a driver whose service creates
	// only what does not exist may write the record without first reading
	// what the resource holds. The controller never sets it on a resource
	// that existed before the pass (an adoption, a re-attach, another
	// installation's). The other operations ignore it.
	JustCreated bool
}

// Inspection is what Inspect found.
type Inspection struct {
	Exists     bool
	HasContent bool
	// Detail explains HasContent for messages, such as "partition 3 holds 12 records".
	Detail string
}

// EnsureResult reports what Ensure did.
type EnsureResult struct {
	// Created is true when this call created the resource.
	Created bool
	// CreateUnproven: Created, on a service that also answers success to
	// a create of a resource that already exists under the same keys (AWS
	// S3 in us-east-1 answers a re-create by the bucket's owner 200).
	// Another installation using those keys may have created it a moment
	// before: the controller reads the owner record before writing its
	// own, and yields to one already there. The driver writes nothing
	// else to such a resource in this call (its parameters are not
	// converged): the caller calls Ensure again once the record says the
	// resource is its own.
	CreateUnproven bool
	// Changes lists the writes made to repair drift or apply new parameters,
	// one human-readable line each; empty when nothing was written. In a dry
	// run, the writes that would have been made.
	Changes []string
	// Shortfalls lists parameters the service could not apply (for example a
	// feature it answers NotImplemented for). The resource is usable; the
	// shortfall is surfaced as a condition, not as a failure.
	Shortfalls []Shortfall
}

// Shortfall is a parameter the service did not apply.
type Shortfall struct {
	Parameter string
	Message   string
}

// Access identifies one consumer of a resource.
type Access struct {
	// Resource is the backend resource name, from the Buckety's claim. In
	// Revoke it is empty when the Buckety no longer holds a claim: the
	// principal is revoked wherever it has rights.
	Resource string
	// Namespace and Name identify the BucketyAccess, for principal naming.
	Namespace, Name string
	// Role is the requested role; "" is ReadWrite (Role.OrDefault).
	Role Role
	// Parameters are the access's spec.parameters.
	Parameters map[string]string
	// ResourceParameters are the Buckety's spec.parameters, for drivers
	// whose Secret depends on them (an S3 bucket's region).
	ResourceParameters map[string]string
	// UID is the BucketyAccess's UID, from which a CredentialIssuer
	// derives principals.
	UID string
	// Installation names the controller's installation
	// (buckety-controller.yaml installation): a CredentialIssuer puts its
	// marker (InstallationMarker) in the names of the principals it
	// derives, so that a sweep can tell this installation's from
	// another's. Empty: principals named as by earlier releases.
	Installation string
	// Principal is the access's credential on a CredentialIssuer backend
	// (empty otherwise): Grant creates or updates it, Revoke removes it.
	Principal string
	// Secret is the principal's secret (a password) as the access's Secret
	// holds it; empty when the Secret holds none for this principal, and
	// Grant then issues a new one.
	Secret string
	// Assert says how far Grant checks the principal on the service:
	// Trust (the zero value), Reassert, IssueNew or IssueRecorded.
	Assert Assertion
	// SecretFormats are the access's spec.secretFormats: Grant adds the
	// keys of each (SecretFormatter) to Data, from the same credentials.
	SecretFormats []string
	// Several lists every resource of an access naming several Bucketies
	// (spec.bucketyRefs), in the order it names them; nil for an access
	// naming one. Grant gives the principal the role's rights on each and
	// returns the Secret's several-resource shape (SeveralKey); Resource
	// and ResourceParameters are then the first's. Only a driver that is
	// a SeveralGranter is given more than one. In Revoke, the resources
	// the principal was granted on.
	Several []AccessResource
	// Drop lists resources the principal was granted on and must hold
	// nothing on any more (one of several Bucketies stopped sharing with
	// the access): Grant, with Reassert, takes its rights there away.
	Drop []string
}

// AccessResource is one of the resources of an access naming several
// Bucketies.
type AccessResource struct {
	// Key names the resource in the Secret's keys of several
	// (SeveralKey): the Buckety's name, or <namespace>_<name> for another
	// namespace's (neither holds an underscore).
	Key string
	// Name is the backend resource name, from the Buckety's claim.
	Name string
	// Parameters are the Buckety's effective location parameters, as
	// ResourceParameters.
	Parameters map[string]string
}

// Resources returns the backend resource names the access is granted on:
// Several's, or Resource alone (none when Resource is empty).
func (a Access) Resources() []string {
	if len(a.Several) > 0 {
		out := make([]string, len(a.Several))
		for i, r := range a.Several {
			out[i] = r.Name
		}
		return out
	}
	if a.Resource == "" {
		return nil
	}
	return []string{a.Resource}
}

// SeveralGranter is implemented by a Driver whose Grant and Revoke honour
// Access.Several: the webhook and the controller refuse spec.bucketyRefs
// on a backend whose driver is not one.
type SeveralGranter interface {
	// GrantsSeveral says that the driver does.
	GrantsSeveral()
}

// SeveralKey is the Secret key that names one resource of several: base
// (a driver's "topic", "bucket") and the resource's Key, joined by a dot.
func SeveralKey(base, key string) string { return base + "." + key }

// SeveralList joins resource names for a Secret's list key ("topics",
// "buckets"): comma-separated, in the order the access names them.
func SeveralList(names []string) string { return strings.Join(names, ",") }

// Assertion says how far Grant checks an access's principal on the
// service. Each value does what the one before it does, and more.
type Assertion int

const (
	// Trust: a previous Grant made the principal and its rights, and
	// Grant returns the Secret payload without a request to the service.
	Trust Assertion = iota
	// Reassert: Grant creates or updates the principal with Secret and
	// makes its rights exactly the role's, reading what it has first.
	Reassert
	// IssueNew: the principal is being issued and its access has not
	// changed since the issue was recorded: it has no rights on the
	// backend but what this grant (or an interrupted attempt of it) makes,
	// so Grant may create them without reading them first.
	IssueNew
	// IssueRecorded: IssueNew, and the controller recorded the principal
	// in this very pass, right after it saw that the principal did not
	// exist: one that exists when Grant creates it was made by someone
	// else meanwhile, and Grant returns a *PrincipalExistsError rather
	// than take it over (where the service can create without
	// overwriting).
	IssueRecorded
)

// Asserts reports whether Grant creates or updates the principal and its
// rights (Reassert or more) rather than trusting an earlier Grant.
func (a Access) Asserts() bool { return a.Assert >= Reassert }

// IsNew reports whether the principal is being issued (IssueNew or more).
func (a Access) IsNew() bool { return a.Assert >= IssueNew }

// JustRecorded reports IssueRecorded.
func (a Access) JustRecorded() bool { return a.Assert == IssueRecorded }

// Grant is the result of granting an access.
type Grant struct {
	// Data is the Secret payload: flat keys, stable per driver.
	Data map[string][]byte
	// Principal names the backend-side identity, if the driver has one.
	Principal string
	// PerAccess is true when the credentials are restricted to the requested
	// role and parameters. False means every access gets the same
	// credentials, which the controller surfaces as ScopingNotImplemented.
	PerAccess bool
	// Reason says why the credentials are not the access's own (PerAccess false): what
	// the service, the config or the requested role lacks.
	Reason string
}
