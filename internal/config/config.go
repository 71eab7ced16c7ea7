package config

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/configfile"
	"github.com/Yolean/buckety-controller/internal/envsubst"
	"github.com/Yolean/buckety-controller/internal/naming"
)

// Filename is the name of the config file inside the -c directory.
const Filename = "buckety-controller.yaml"

// Config is the content of buckety-controller.yaml.
type Config struct {
	// Installation names this installation of buckety: one name per
	// controller deployment, written into every owner record buckety keeps
	// on a backend and marked in the names of the principals it issues,
	// so that two installations sharing a broker or an S3 server never
	// take over, write or revoke each other's resources, and an
	// installation rebuilt from git re-attaches its own. A DNS-1123 label
	// of at most 40 characters. Absent: derived from the cluster (the UID
	// of namespace kube-system), which a rebuilt cluster does not keep:
	// set it explicitly for disaster recovery.
	Installation string `json:"installation,omitempty"`
	// FormerInstallations are names this installation had before: owner
	// records on the backends that name one are its own (and rewritten
	// with Installation on their next pass), and so are the principals
	// marked with one. List the default name (the controller logs it at
	// start-up) when an installation that ran with it is given a name, or
	// the old name when one is renamed.
	FormerInstallations []string `json:"formerInstallations,omitempty"`
	// Backends are the named backing-service connections a Buckety can
	// select with spec.backend.
	Backends []Backend `json:"backends"`

	opts Options
	dir  string
}

// Backend is one named connection to a backing service.
type Backend struct {
	// Name is what Buckety.spec.backend refers to: a DNS-1123 label, unique
	// in the file.
	Name string `json:"name"`
	// Driver names the registered driver that talks to the service.
	Driver string `json:"driver"`
	// Config is the driver's options, decoded strictly into the driver's own
	// type; its schema is the driver's config.schema.json.
	Config json.RawMessage `json:"config,omitempty"`
	// Defaults are values a naming template reads as ${backend.key}.
	Defaults map[string]string `json:"defaults,omitempty"`
	// NamePolicy restricts the backend resource names tenants can claim.
	NamePolicy *NamePolicy `json:"namePolicy,omitempty"`
	// Adoption is the maintainer's key for taking over resources that
	// already exist with content; absent means adoption is not allowed.
	Adoption *Adoption `json:"adoption,omitempty"`
	// Service names the backing service this backend reaches, and so the
	// space in which each topic or bucket has exactly one owner: claims
	// are keyed by service and resource name. Default: the backend's own
	// name. Backends that reach the same service (the same Kafka brokers,
	// the same S3 endpoint) must name the same service, or the file is
	// refused: through two claim spaces, a resource created through one
	// backend could be claimed, adopted and deleted through the other.
	Service string `json:"service,omitempty"`
	// Limits bound what one namespace may have on this backend; enforced
	// at admission and by the controller.
	Limits *Limits `json:"limits,omitempty"`
	// ReservedNames are names no Buckety may resolve to on this backend,
	// as globs (* matches any run of characters), on top of the names the
	// driver reserves itself (kadm: the internal topics of Kafka, Schema
	// Registry, Kafka Connect, Confluent and Redpanda). On kadm a pattern
	// also reserves the names that differ only in '.' against '_' (Kafka
	// takes them for the same topic: "_schemas" reserves ".schemas"). A
	// pattern ending
	// in * that reserves every name starting with the longer text of two
	// overlapping name policies on one service makes that pair safe, and
	// the check of overlapping policies lets such a file load.
	ReservedNames []string `json:"reservedNames,omitempty"`
	// Credentials configures the lifecycle (rotation, grace, revocation of
	// orphans) of the credentials issued per access, the same for every
	// driver. Whether a backend issues them at all is its driver's
	// config.credentials.mode.
	Credentials *Credentials `json:"credentials,omitempty"`
	// Ownership configures handovers of resources between installations
	// (a cluster migration).
	Ownership *Ownership `json:"ownership,omitempty"`
	// Parameters are defaults merged under each Buckety's spec.parameters
	// on this backend: a key the Buckety sets wins. They are validated
	// with the driver's rules and the limits when the file loads, count
	// toward budgets as if the tenant had written them (a disk budget's
	// config.retention.bytes, for one), and are recorded in each
	// Buckety's status.parameterDefaults; its status.effectiveParameters
	// show the merge (kubectl describe). Keys in limits.deniedParameters
	// may be defaulted: the list binds tenants, not the platform.
	Parameters map[string]string `json:"parameters,omitempty"`
	// ConvergeParameters applies changed, added and removed defaults to
	// existing Bucketies on their next pass. Default false: a Buckety
	// keeps the defaults it was first provisioned with (its
	// status.parameterDefaults), and a changed default applies to new
	// Bucketies only, because a lowered retention default would
	// otherwise delete data in every tenant's topic at once. Growth a
	// converged default asks for is checked against budgets as a
	// tenant's edit is.
	ConvergeParameters bool `json:"convergeParameters,omitempty"`
	// Drain configures Buckety spec.drain (emptying a resource and keeping
	// it) on this backend.
	Drain *Drain `json:"drain,omitempty"`
	// Sharing configures Buckety spec.sharing (accesses from other
	// namespaces) on this backend.
	Sharing *Sharing `json:"sharing,omitempty"`

	options drivers.Config
	driver  drivers.Driver
	// policyUnresolved is set when the file is loaded without the
	// environment and namePolicy.prefix references a variable.
	policyUnresolved bool
	// limitsOverride is the entry of limits.namespaces a ForNamespace
	// copy took its figures from (limitsEntry its index), nil otherwise.
	limitsOverride *NamespaceLimits
	limitsEntry    int
}

// NamePolicy restricts resolved backend resource names, so that one tenant
// cannot claim another tenant's topic or bucket name.
type NamePolicy struct {
	// Prefix is a naming template (the spec.name grammar) that every
	// resolved name must start with. The file is environment-substituted,
	// so template references are escaped with $$: "$${namespace}." or
	// "$${backend.zone}-$${namespace}.".
	Prefix string `json:"prefix" envsubst:"true"`
}

// Adoption is the maintainer's half of the two-key opt-in to adopting
// existing resources that hold content: the tenant's half is
// Buckety.spec.adoption. Allow it only together with a namePolicy, so that a
// tenant can adopt only names under its own prefix.
type Adoption struct {
	// Allow lets Bucketies on this backend set spec.adoption (Adopt or
	// AdoptAndConverge) and take over an existing resource with content.
	Allow bool `json:"allow"`
	// DeleteAdopted lets retentionPolicy Delete delete a resource whose
	// adoption settled (claim phase Adopted), content and all. Default
	// false: an adopted resource is always retained. It governs deletion
	// only: a drain (spec.drain, where drain.allow lets this backend's
	// tenants ask for one) empties an adopted resource as any other.
	DeleteAdopted bool `json:"deleteAdopted,omitempty"`
}

// MaxBucketyRefs is the most Bucketies a BucketyAccess may name
// (spec.bucketyRefs' bound in the CRD).
const MaxBucketyRefs = 128

// BucketyRefsPerAccess is the most Bucketies of this backend one access
// may name: limits.bucketyRefsPerAccess, or MaxBucketyRefs.
func (b *Backend) BucketyRefsPerAccess() int {
	if b.Limits != nil && b.Limits.BucketyRefsPerAccess > 0 {
		return b.Limits.BucketyRefsPerAccess
	}
	return MaxBucketyRefs
}

// Limits bound what one namespace may have on a backend.
type Limits struct {
	// PerNamespace is the most Bucketies one namespace may have on this
	// backend (counted at admission from the Bucketies naming it, and by
	// the controller from the namespace's claims recorded through it); 0
	// or absent: no limit. Each backend counts its own, as do the budgets
	// below: two backends that reach one service with a limit each let a
	// namespace hold both there.
	PerNamespace int `json:"perNamespace,omitempty"`
	// AccessesPerNamespace is the most BucketyAccesses (explicit and
	// implicit) one namespace may have on Bucketies of this backend: each
	// may hold a credential of its own on the backend (a user, a key, and
	// its rights), which costs the backend for every tenant. Counted at
	// admission and by the controller, which grants the oldest accesses
	// first and lets the others wait (LimitExceeded); 0 or absent: no
	// limit.
	AccessesPerNamespace int `json:"accessesPerNamespace,omitempty"`
	// AccessesPerBuckety is the most BucketyAccesses that may name one
	// Buckety of this backend (a bucket policy, for one, holds a statement
	// per key); counted as AccessesPerNamespace is; 0 or absent: no
	// limit.
	AccessesPerBuckety int `json:"accessesPerBuckety,omitempty"`
	// BucketyRefsPerAccess is the most Bucketies of this backend one
	// BucketyAccess may name in spec.bucketyRefs, each adding rights (an
	// ACL set, a policy statement) to its one credential; 1 to 128 (the
	// CRD's own bound, COSI's), 0 or absent: 128.
	BucketyRefsPerAccess int `json:"bucketyRefsPerAccess,omitempty"`
	// ParameterMax bounds integer parameters of this backend's driver, by
	// key: `partitions: 64` refuses spec.parameters.partitions above 64.
	ParameterMax map[string]int64 `json:"parameterMax,omitempty"`
	// ParameterMin bounds integer parameters from below, by key:
	// `config.segment.ms: 60000` refuses spec.parameters values below one
	// minute, so that no tenant loads a shared broker with tiny segments.
	ParameterMin map[string]int64 `json:"parameterMin,omitempty"`
	// DeniedParameters are parameter keys tenants may not set, as globs
	// (* matches any run of characters): `config.flush.*` refuses
	// config.flush.messages and config.flush.ms. Backend defaults
	// (parameters) may still set them.
	DeniedParameters []string `json:"deniedParameters,omitempty"`
	// Namespaces override the figures above for some namespaces: the
	// first entry, in file order, that names a namespace or whose selector
	// matches its labels replaces each figure it sets (a figure it leaves
	// out stays the backend's). A platform gives one team more, or less,
	// without a second backend. Relabelling a namespace wakes its
	// Bucketies that wait for room under its limits.
	Namespaces []NamespaceLimits `json:"namespaces,omitempty"`

	// Partitions is the most topic partitions one namespace may have on
	// this backend, summed over its topics. With a partition budget, a
	// topic must set partitions (the broker's default could be anything),
	// and may not remove it once set; 0 or absent: no budget.
	Partitions int64 `json:"partitions,omitempty"`
	// DiskBytes is the most disk one namespace's topics may claim on this
	// backend: (retention.bytes + segment.bytes + max.message.bytes when
	// the topic sets it) × partitions, summed, since Kafka keeps each
	// partition's active segment beyond its retention (and Redpanda one
	// batch past a segment's size). With a disk budget, a topic must set partitions,
	// config.retention.bytes and config.segment.bytes (unbounded retention
	// and the broker's default segment size are refused), and may not set
	// file.delete.delay.ms or segment.index.bytes above Kafka's defaults.
	// Absent: no budget.
	DiskBytes drivers.ByteSize `json:"diskBytes,omitzero"`
	// QuotaBytes is the most bucket quota one namespace may have on this
	// backend: its buckets' quota parameters, summed. With a quota
	// budget, a bucket must set a quota. Absent: no budget.
	QuotaBytes drivers.ByteSize `json:"quotaBytes,omitzero"`
}

// NamespaceLimits are the limits of the namespaces an entry of
// limits.namespaces matches.
type NamespaceLimits struct {
	// Names are namespaces the entry applies to.
	Names []string `json:"names,omitempty"`
	// Selector matches namespaces by their labels (which only the
	// platform sets on a namespace).
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// The figures, as in limits; absent: the backend's.
	PerNamespace         *int              `json:"perNamespace,omitempty"`
	AccessesPerNamespace *int              `json:"accessesPerNamespace,omitempty"`
	AccessesPerBuckety   *int              `json:"accessesPerBuckety,omitempty"`
	Partitions           *int64            `json:"partitions,omitempty"`
	DiskBytes            *drivers.ByteSize `json:"diskBytes,omitempty"`
	QuotaBytes           *drivers.ByteSize `json:"quotaBytes,omitempty"`

	selector labels.Selector
}

// HasByteBudget reports whether the limits budget partitions or bytes (the
// budgets summed over resources, not counted).
func (l *Limits) HasByteBudget() bool {
	return l != nil && (l.Partitions > 0 || l.DiskBytes.Bytes > 0 || l.QuotaBytes.Bytes > 0)
}

// Credentials configures the rotation of per-access credentials.
type Credentials struct {
	// MaxAge rotates a credential once it is this old (as a rotation the
	// tenant asked for with spec.rotation); 0 or absent: only on request.
	MaxAge drivers.Duration `json:"maxAge,omitzero"`
	// RotationGrace is how long a rotated credential keeps working after
	// its successor was written to the Secret, for consumers to reload
	// it. Default 10m.
	RotationGrace *drivers.Duration `json:"rotationGrace,omitempty"`
	// OrphanGrace is how long a principal this installation issued may
	// exist on the backend with no live access accounting for it (after a
	// rebuild, or a BucketyCredential deleted by hand) before it is
	// revoked. Default 5m.
	OrphanGrace *drivers.Duration `json:"orphanGrace,omitempty"`
}

// Ownership configures the handover of this backend's resources between
// installations. A handover needs both sides: the giving installation
// sets handOverTo, which marks the owner record of each of its resources
// on the backend handed over (and stops writing to them, revoking their
// credentials), and the receiving installation lists the giver in
// acceptFrom, so that its Bucketies of the same namespace and name take
// the resources over with their data.
type Ownership struct {
	// HandOverTo names the installation this one hands every resource it
	// owns on the backend over to.
	HandOverTo string `json:"handOverTo,omitempty"`
	// AcceptFrom names the installations whose handovers to this one are
	// accepted on the backend.
	AcceptFrom []string `json:"acceptFrom,omitempty"`
}

// HandOverTo is the installation b's resources are handed over to, "" for
// none.
func (b *Backend) HandOverTo() string {
	if b.Ownership == nil {
		return ""
	}
	return b.Ownership.HandOverTo
}

// AcceptsHandoverFrom reports whether b accepts resources handed over by
// installation.
func (b *Backend) AcceptsHandoverFrom(installation string) bool {
	if b.Ownership == nil {
		return false
	}
	for _, i := range b.Ownership.AcceptFrom {
		if i == installation {
			return true
		}
	}
	return false
}

// DefaultOrphanGrace is Credentials.OrphanGrace when not set.
const DefaultOrphanGrace = 5 * time.Minute

// OrphanGrace is b's credentials.orphanGrace, or its default.
func (b *Backend) OrphanGrace() time.Duration {
	if b.Credentials != nil && b.Credentials.OrphanGrace != nil {
		return b.Credentials.OrphanGrace.Duration
	}
	return DefaultOrphanGrace
}

// MaxInstallationLen bounds Config.Installation.
const MaxInstallationLen = 40

// ValidInstallation returns what is wrong with an installation name, nil
// when nothing.
func ValidInstallation(name string) []string {
	msgs := validation.IsDNS1123Label(name)
	if len(name) > MaxInstallationLen {
		msgs = append(msgs, fmt.Sprintf("must be at most %d characters", MaxInstallationLen))
	}
	return msgs
}

// DefaultRotationGrace is Credentials.RotationGrace when not set.
const DefaultRotationGrace = 10 * time.Minute

// RotationGrace is b's credentials.rotationGrace, or its default.
func (b *Backend) RotationGrace() time.Duration {
	if b.Credentials != nil && b.Credentials.RotationGrace != nil {
		return b.Credentials.RotationGrace.Duration
	}
	return DefaultRotationGrace
}

// CredentialMaxAge is b's credentials.maxAge; 0: no maximum.
func (b *Backend) CredentialMaxAge() time.Duration {
	if b.Credentials == nil {
		return 0
	}
	return b.Credentials.MaxAge.Duration
}

// Options controls how the file is loaded.
type Options struct {
	// Registry holds the drivers this binary can use.
	Registry *drivers.Registry
	// WithoutCredentials loads the file for validation only, as the
	// admission webhook does: it runs with no environment and none of the
	// controller's mounted files, and must load every file the controller
	// accepts. Fields tagged `credential:"true"` are cleared and not
	// required; no variable is substituted: a tagged field referencing one
	// (${VAR} or ${VAR:-default}) is cleared and the checks of its value are
	// skipped; fields tagged `file:"true"` (paths of files mounted into the
	// controller, such as caFile) are cleared and never read. Everything
	// else is validated as for the controller: backend and driver names,
	// defaults, the name policy, the implementation discriminator and every
	// literal option value. Lookup is not used.
	WithoutCredentials bool
	// Lookup resolves ${VAR} in driver options; nil means the process
	// environment.
	Lookup envsubst.LookupFunc
}

// Load reads dir/buckety-controller.yaml with the y-cluster contract and
// decodes each backend's config into its driver's options type.
func Load(dir string, opts Options) (*Config, error) {
	if opts.Registry == nil {
		return nil, fmt.Errorf("config.Load: no driver registry")
	}
	if opts.Lookup == nil {
		opts.Lookup = envsubst.OSEnv
	}
	c := &Config{opts: opts}
	if err := configfile.Load(dir, Filename, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Substitute implements configfile.Substituter: the file's own tagged
// fields (namePolicy.prefix) are substituted with Options.Lookup, or
// neutralised when the file is loaded without the environment. Each
// backend's config block is substituted when it is decoded, in Validate.
func (c *Config) Substitute() error {
	if !c.opts.WithoutCredentials {
		return envsubst.Apply(c, c.opts.Lookup)
	}
	unresolved, err := envsubst.Neutralize(c)
	if err != nil {
		return err
	}
	for _, path := range unresolved {
		for i := range c.Backends {
			if path == fmt.Sprintf("backends[%d].namePolicy.prefix", i) {
				c.Backends[i].policyUnresolved = true
			}
		}
	}
	return nil
}

// SetDir implements configfile.DirSetter.
func (c *Config) SetDir(abs string) { c.dir = abs }

// Dir is the absolute directory the file was loaded from.
func (c *Config) Dir() string { return c.dir }

// Validate implements configfile.Validator: backend names are unique DNS
// labels, drivers are registered, driver options decode strictly and pass
// the driver's checks, and defaults keys are usable in templates.
func (c *Config) Validate() error {
	var errs field.ErrorList
	if c.Installation != "" {
		for _, msg := range ValidInstallation(c.Installation) {
			errs = append(errs, field.Invalid(field.NewPath("installation"), c.Installation, msg))
		}
		for i := range c.Backends {
			if to := c.Backends[i].HandOverTo(); to == c.Installation {
				errs = append(errs, field.Invalid(field.NewPath("backends").Index(i).Child("ownership", "handOverTo"), to, "names this installation; name the installation that receives the backend's resources"))
			}
		}
	}
	for i, n := range c.FormerInstallations {
		for _, msg := range ValidInstallation(n) {
			errs = append(errs, field.Invalid(field.NewPath("formerInstallations").Index(i), n, msg))
		}
		if n == c.Installation {
			errs = append(errs, field.Invalid(field.NewPath("formerInstallations").Index(i), n, "is the installation's name (installation); list only names it had before"))
		}
	}
	root := field.NewPath("backends")
	if len(c.Backends) == 0 {
		errs = append(errs, field.Required(root, "define at least one backend (name, driver, config)"))
	}
	seen := map[string]int{}
	// policyChecked marks, by index, the backends whose name policy passed
	// checkPolicy, for checkPolicyOverlaps.
	policyChecked := make([]bool, len(c.Backends))
	for i := range c.Backends {
		b := &c.Backends[i]
		p := root.Index(i)
		switch {
		case b.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "the name Buckety.spec.backend refers to"))
		default:
			for _, msg := range validation.IsDNS1123Label(b.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), b.Name, msg))
			}
			if j, dup := seen[b.Name]; dup {
				errs = append(errs, field.Duplicate(p.Child("name"), fmt.Sprintf("%s (also backends[%d].name); backend names must be unique", b.Name, j)))
			}
			seen[b.Name] = i
		}
		fieldErrs, policyOK := b.validateFields(p)
		errs = append(errs, fieldErrs...)
		if b.Driver == "" {
			errs = append(errs, field.Required(p.Child("driver"), fmt.Sprintf("one of: %s", c.driverList())))
			continue
		}
		d, ok := c.opts.Registry.Get(b.Driver)
		if !ok {
			errs = append(errs, field.Invalid(p.Child("driver"), b.Driver, fmt.Sprintf("unknown driver; this build has: %s", c.driverList())))
			continue
		}
		b.driver = d
		errs = append(errs, b.validateDrainDriver(p)...)
		optErrs := c.decodeOptions(b, p.Child("config"))
		errs = append(errs, optErrs...)
		if len(optErrs) == 0 && len(b.Parameters) > 0 {
			errs = append(errs, b.checkDefaults(p.Child("parameters"))...)
		}
		if len(optErrs) == 0 {
			errs = append(errs, b.checkLimitKeys(p.Child("limits"))...)
		}
		if b.NamePolicy != nil && !b.policyUnresolved && policyOK && len(optErrs) == 0 {
			if err := b.checkPolicy(); err != nil {
				errs = append(errs, field.Invalid(p.Child("namePolicy", "prefix"), b.NamePolicy.Prefix, err.Error()))
			} else {
				policyChecked[i] = true
			}
		}
	}
	errs = append(errs, c.checkServices(root)...)
	errs = append(errs, c.checkPolicyOverlaps(root, policyChecked)...)
	if len(errs) > 0 {
		return &ValidationError{Errs: errs}
	}
	return nil
}

// checkDefaults validates the backend's parameter defaults with the
// driver's rules and the limits' bounds (deniedParameters binds tenants,
// not defaults).
func (b *Backend) checkDefaults(p *field.Path) field.ErrorList {
	_, errs := b.driver.ValidateParameters(p, b.options, nil, b.Parameters)
	if b.Limits != nil {
		errs = append(errs, b.checkBounds(p, b.Parameters)...)
	}
	return errs
}

// validateFields checks b's own fields, those that need no driver: the
// name policy's template (policyOK false when it does not parse), adoption,
// service, reserved names, credentials, limits and defaults keys.
func (b *Backend) validateFields(p *field.Path) (errs field.ErrorList, policyOK bool) {
	policyOK = true
	if b.NamePolicy != nil && !b.policyUnresolved {
		if _, err := naming.Parse(b.NamePolicy.Prefix); err != nil || b.NamePolicy.Prefix == "" {
			msg := "a naming template, as ${namespace}."
			if err != nil {
				msg = err.Error()
			}
			errs = append(errs, field.Invalid(p.Child("namePolicy", "prefix"), b.NamePolicy.Prefix, msg))
			policyOK = false
		}
	}
	if a := b.Adoption; a != nil && a.DeleteAdopted && !a.Allow {
		errs = append(errs, field.Invalid(p.Child("adoption", "deleteAdopted"), true, "applies only to adopted resources; set adoption.allow: true as well, or remove deleteAdopted"))
	}
	if b.Service != "" {
		for _, msg := range validation.IsDNS1123Label(b.Service) {
			errs = append(errs, field.Invalid(p.Child("service"), b.Service, msg))
		}
	}
	for j, pat := range b.ReservedNames {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			errs = append(errs, field.Invalid(p.Child("reservedNames").Index(j), pat, "a name or a glob (* matches any run of characters, ? one character, [a-z] a class)"))
		}
	}
	if cr := b.Credentials; cr != nil {
		if cr.MaxAge.Duration < 0 {
			errs = append(errs, field.Invalid(p.Child("credentials", "maxAge"), cr.MaxAge.String(), "must not be negative"))
		}
		if cr.RotationGrace != nil && cr.RotationGrace.Duration < 0 {
			errs = append(errs, field.Invalid(p.Child("credentials", "rotationGrace"), cr.RotationGrace.String(), "must not be negative"))
		}
		if cr.OrphanGrace != nil && cr.OrphanGrace.Duration < 0 {
			errs = append(errs, field.Invalid(p.Child("credentials", "orphanGrace"), cr.OrphanGrace.String(), "must not be negative"))
		}
		if cr.RotationGrace != nil && cr.MaxAge.Duration > 0 && cr.RotationGrace.Duration >= cr.MaxAge.Duration {
			errs = append(errs, field.Invalid(p.Child("credentials", "rotationGrace"), cr.RotationGrace.String(), "must be shorter than maxAge"))
		}
	}
	if o := b.Ownership; o != nil {
		if o.HandOverTo != "" {
			for _, msg := range ValidInstallation(o.HandOverTo) {
				errs = append(errs, field.Invalid(p.Child("ownership", "handOverTo"), o.HandOverTo, msg))
			}
		}
		for j, from := range o.AcceptFrom {
			for _, msg := range ValidInstallation(from) {
				errs = append(errs, field.Invalid(p.Child("ownership", "acceptFrom").Index(j), from, msg))
			}
		}
	}
	errs = append(errs, b.validateDrain(p.Child("drain"))...)
	errs = append(errs, b.validateSharing(p.Child("sharing"))...)
	if l := b.Limits; l != nil {
		for _, c := range []struct {
			key string
			n   int
		}{{"perNamespace", l.PerNamespace}, {"accessesPerNamespace", l.AccessesPerNamespace}, {"accessesPerBuckety", l.AccessesPerBuckety}} {
			if c.n < 0 {
				errs = append(errs, field.Invalid(p.Child("limits", c.key), c.n, "must be at least 0 (0: no limit)"))
			}
		}
		if l.Partitions < 0 {
			errs = append(errs, field.Invalid(p.Child("limits", "partitions"), l.Partitions, "must be at least 0 (0: no budget)"))
		}
		if l.BucketyRefsPerAccess < 0 || l.BucketyRefsPerAccess > MaxBucketyRefs {
			errs = append(errs, field.Invalid(p.Child("limits", "bucketyRefsPerAccess"), l.BucketyRefsPerAccess, fmt.Sprintf("must be 1 to %d (0: %d)", MaxBucketyRefs, MaxBucketyRefs)))
		}
		for k, v := range l.ParameterMax {
			if v < 1 {
				errs = append(errs, field.Invalid(p.Child("limits", "parameterMax").Key(k), v, "must be at least 1"))
			}
		}
		for k, v := range l.ParameterMin {
			if v < 0 {
				errs = append(errs, field.Invalid(p.Child("limits", "parameterMin").Key(k), v, "must be at least 0"))
			}
			if m, ok := l.ParameterMax[k]; ok && v > m {
				errs = append(errs, field.Invalid(p.Child("limits", "parameterMin").Key(k), v, fmt.Sprintf("is above limits.parameterMax.%s (%d): no value could pass both", k, m)))
			}
		}
		for j, pat := range l.DeniedParameters {
			if _, err := path.Match(pat, ""); err != nil || pat == "" {
				errs = append(errs, field.Invalid(p.Child("limits", "deniedParameters").Index(j), pat, "a parameter key or a glob (* matches any run of characters), as config.flush.*"))
			}
		}
		errs = append(errs, l.validateNamespaces(p.Child("limits", "namespaces"))...)
	}
	for k := range b.Defaults {
		if !naming.ValidBackendKey(k) {
			errs = append(errs, field.Invalid(p.Child("defaults").Key(k), k, "key must be letters, digits, _ and -, starting with a letter or _, so templates can use ${backend."+k+"}"))
		}
	}
	return errs, policyOK
}

func (c *Config) driverList() string {
	if n := c.opts.Registry.Names(); len(n) > 0 {
		return strings.Join(n, ", ")
	}
	return "(no drivers in this build)"
}

// decodeOptions decodes, substitutes and validates one backend's config.
func (c *Config) decodeOptions(b *Backend, p *field.Path) field.ErrorList {
	opts := b.driver.NewConfig()
	raw := b.Config
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := configfile.DecodeStrict(raw, opts); err != nil {
		return field.ErrorList{fromConfigfile(p, err)}
	}
	if ds, ok := opts.(configfile.DirSetter); ok {
		ds.SetDir(c.dir)
	}
	// Paths (relative to the config block) whose checks are skipped when
	// the file is loaded without the controller's environment and files.
	var skip []string
	var err error
	if c.opts.WithoutCredentials {
		skip = append(taggedPaths(reflect.TypeOf(opts), "", "credential"), taggedPaths(reflect.TypeOf(opts), "", "file")...)
		clearTagged(reflect.ValueOf(opts), "credential")
		clearTagged(reflect.ValueOf(opts), "file")
		var unresolved []string
		unresolved, err = envsubst.Neutralize(opts)
		skip = append(skip, unresolved...)
	} else {
		err = envsubst.Apply(opts, c.opts.Lookup)
	}
	if err != nil {
		if ee, ok := err.(*envsubst.Error); ok {
			return field.ErrorList{field.Invalid(sub(p, ee.Path), field.OmitValueType{}, ee.Msg)}
		}
		return field.ErrorList{field.InternalError(p, err)}
	}
	var errs field.ErrorList
	for _, e := range opts.Validate(p) {
		if under(p, e.Field, skip) {
			continue
		}
		errs = append(errs, e)
	}
	b.options = opts
	return errs
}

// sub appends a dotted, bracketed path produced by envsubst or configfile
// to p.
func sub(p *field.Path, rel string) *field.Path {
	if rel == "" {
		return p
	}
	return field.NewPath(p.String() + "." + rel)
}

func fromConfigfile(p *field.Path, err error) *field.Error {
	if ce, ok := err.(*configfile.Error); ok {
		return field.Invalid(sub(p, ce.Path), field.OmitValueType{}, ce.Msg)
	}
	return field.Invalid(p, field.OmitValueType{}, err.Error())
}

// ValidationError is every problem Validate found.
type ValidationError struct {
	Errs field.ErrorList
}

func (e *ValidationError) Error() string {
	if len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	lines := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		lines[i] = "  - " + fe.Error()
	}
	return fmt.Sprintf("%d problems:\n%s", len(e.Errs), strings.Join(lines, "\n"))
}

// Registry is the driver registry the file was loaded with.
func (c *Config) Registry() *drivers.Registry { return c.opts.Registry }

// Backend returns the backend named name.
func (c *Config) Backend(name string) (*Backend, bool) {
	for i := range c.Backends {
		if c.Backends[i].Name == name {
			return &c.Backends[i], true
		}
	}
	return nil, false
}

// BackendNames returns the backend names in file order.
func (c *Config) BackendNames() []string {
	out := make([]string, len(c.Backends))
	for i, b := range c.Backends {
		out[i] = b.Name
	}
	return out
}

// Notices are the lines to be logged once at startup, each prefixed
// "backend NAME: ", in file order: those the backends' driver configs ask
// for (drivers.Noticer: a setting inferred from an older spelling), and
// one for each backend without a namePolicy on a service where another
// backend has one (policyNotice), a setup the file may hold but the
// maintainer should see.
func (c *Config) Notices() []string {
	var out []string
	for i, b := range c.Backends {
		if n, ok := b.options.(drivers.Noticer); ok {
			for _, line := range n.Notices() {
				out = append(out, "backend "+b.Name+": "+line)
			}
		}
		if line := c.policyNotice(i); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// Options returns the backend's decoded, validated driver options.
func (b *Backend) Options() drivers.Config { return b.options }

// DriverImpl returns the backend's driver.
func (b *Backend) DriverImpl() drivers.Driver { return b.driver }
