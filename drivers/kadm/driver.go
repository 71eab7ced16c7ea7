package kadm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// Name is the driver's registry name. It never changes.
const Name = "kadm"

// version is the driver's SemVer; releases override it with
// -ldflags "-X github.com/Yolean/buckety-controller/drivers/kadm.version=0.4.1".
//
// 0.4.0 adds secret formats (java, librdkafka): keys an access asks for in
// spec.secretFormats, additively; a Secret without them is unchanged.
//
// 0.6.0 refuses removing partitions once set (the topic keeps them, so
// a budget counting the broker's default would be walked past), in
// ValidateParameters and the published schema's transition rule.
//
// 0.7.0 keeps an owner record per topic in a registry topic
// (drivers.OwnerRecorder; config ownerRegistry.topic), names new principals
// with their installation's marker and lists them (drivers.PrincipalLister),
// and confirms a missing topic with the controller (a validate-only
// CreateTopics) before the adoption check reports it missing. A minor:
// principals already issued keep their names, and nothing stored changes
// meaning.
//
// 0.8.0 drains a topic and keeps it (drivers.Drainer): DeleteRecords up to
// each partition's high watermark; a topic whose cleanup.policy does not
// include delete is refused. A minor: nothing existing changes.
//
// 0.9.0 grants one access several topics (drivers.SeveralGranter): the
// access's user gets the role's ACLs on each, and its Secret lists them
// (topics, topic.<buckety>) instead of topic, which the published secret
// schema therefore no longer requires. A minor: the Secret of an access
// naming one Buckety is unchanged.
var version = "0.9.0"

// Access parameter keys the driver knows.
const (
	// AccessConsumerGroupPrefix is appended to the access's own group
	// prefix on a backend that issues per-access credentials (credentials.go).
	AccessConsumerGroupPrefix = "consumerGroupPrefix"
)

// Driver is the kadm driver.
type Driver struct {
	// Hooks are added to every admin client the driver opens; tests count
	// requests with them.
	Hooks []kgo.Hook
	// Linger and MaxBatch tune request coalescing (coalesce.go); zero means
	// the defaults, 5 ms and 500 topics (a Metadata request
	// metadataBatchFactor times as many).
	Linger   time.Duration
	MaxBatch int
}

func (d *Driver) linger() time.Duration {
	if d.Linger > 0 {
		return d.Linger
	}
	return defaultLinger
}

func (d *Driver) maxBatch() int {
	if d.MaxBatch > 0 {
		return d.MaxBatch
	}
	return defaultMaxBatch
}

var _ drivers.SeveralGranter = (*Driver)(nil)

// GrantsSeveral implements drivers.SeveralGranter: Grant gives the
// access's one user the role's ACLs on every topic of Access.Several, and
// Revoke removes every ACL of the user.
func (*Driver) GrantsSeveral() {}

// New returns the kadm driver.
func New() *Driver { return &Driver{} }

// Name implements drivers.Driver.
func (*Driver) Name() string { return Name }

// Version implements drivers.Driver.
func (*Driver) Version() drivers.Version { return drivers.MustParseVersion(version) }

// NewConfig implements drivers.Driver.
func (*Driver) NewConfig() drivers.Config { return &Config{} }

// maxTopicName is Kafka's topic-name limit.
const maxTopicName = 249

// ValidateName applies Kafka's topic-name rules, and refuses the owner
// registry's topic (the configured one, and the default whatever the
// config says, as a config read for validation only may lack the field).
func (*Driver) ValidateName(p *field.Path, cfg drivers.Config, name string) (warnings []string, errs field.ErrorList) {
	warnings, errs = validTopicName(p, name)
	c, _ := cfg.(*Config)
	if name == DefaultOwnerRegistryTopic || name == c.registryTopic() {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("%q is buckety's owner registry (ownerRegistry.topic): no Buckety may name it", name)))
	}
	return warnings, errs
}

// validTopicName applies Kafka's topic-name rules and keeps "__" names,
// Kafka's internal topics', out of tenants' reach.
func validTopicName(p *field.Path, name string) (warnings []string, errs field.ErrorList) {
	switch {
	case name == "":
		return nil, field.ErrorList{field.Required(p, "the topic name is empty")}
	case name == "." || name == "..":
		return nil, field.ErrorList{field.Invalid(p, name, `"." and ".." are not valid topic names`)}
	case len(name) > maxTopicName:
		errs = append(errs, field.TooLong(p, name, maxTopicName))
	}
	var bad []string
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			if !contains(bad, string(r)) {
				bad = append(bad, string(r))
			}
		}
	}
	if len(bad) > 0 {
		errs = append(errs, field.Invalid(p, name, fmt.Sprintf("a Kafka topic name may contain only ASCII letters, digits, '.', '_' and '-'; found %q", strings.Join(bad, ""))))
	}
	switch {
	case strings.HasPrefix(name, "__"):
		errs = append(errs, field.Invalid(p, name, `names starting with "__" are reserved for Kafka's internal topics`))
	case strings.HasPrefix(foldTopicName(name), "__"):
		// Kafka refuses a topic that collides with an existing one
		// (the names differ only in '.' against '_'), so this name
		// would keep Kafka from creating its internal topic of the
		// "__" spelling (__transaction_state, made on first use).
		errs = append(errs, field.Invalid(p, name, fmt.Sprintf(`Kafka takes '.' and '_' in topic names for the same character, so this name collides with %q, and names starting with "__" are reserved for Kafka's internal topics`, foldTopicName(name))))
	}
	if strings.Contains(name, ".") && strings.Contains(name, "_") {
		warnings = append(warnings, fmt.Sprintf("%s: topic name %q mixes '.' and '_': Kafka metric names replace '.' with '_', so it can collide with another topic's metrics", p, name))
	}
	return warnings, errs
}

// ValidateParameters implements drivers.Driver.
func (*Driver) ValidateParameters(p *field.Path, _ drivers.Config, old, new map[string]string) ([]string, field.ErrorList) {
	return validateParams(p, old, new)
}

// ValidateAccess accepts every role, the consumerGroupPrefix parameter and
// the client quota parameters (quotas.go). Role and prefix are accepted
// with a warning when the backend's config rules out enforcing them (no
// sasl, or shareCredentials); quotas are refused there, because they
// would throttle the shared user. A backend that may scope enforces them
// when its cluster has an authorizer and the SCRAM admin API; the access's
// ScopingNotImplemented condition says whether it does.
func (*Driver) ValidateAccess(p *field.Path, cfg drivers.Config, role drivers.Role, params map[string]string) (warnings []string, errs field.ErrorList) {
	c, _ := cfg.(*Config)
	shared := c == nil || c.sharedWhy() != ""
	for _, k := range sortedKeys(params) {
		kp, v := p.Key(k), params[k]
		q, isQuota := quotaKeyOf(k)
		switch {
		case isQuota:
			if err := validateQuota(kp, c, q, v); err != nil {
				errs = append(errs, err)
			}
		case k == AccessConsumerGroupPrefix && !validGroupPrefix(v):
			errs = append(errs, field.Invalid(kp, v, "a consumer group prefix may contain only ASCII letters, digits, '.', '_' and '-'"))
		case k == AccessConsumerGroupPrefix && shared:
			warnings = append(warnings, fmt.Sprintf("%s: not enforced on this backend (no per-access Kafka users without sasl, or with shareCredentials); any consumer group can be used", kp))
		case k != AccessConsumerGroupPrefix:
			errs = append(errs, field.NotSupported(kp, k, accessKeys()))
		}
	}
	if shared && role.OrDefault() != drivers.RoleReadWrite {
		warnings = append(warnings, fmt.Sprintf("role %s is not enforced on this backend (no per-access Kafka users without sasl, or with shareCredentials): the credentials allow reading and writing (ScopingNotImplemented)", role))
	}
	return warnings, errs
}

// accessKeys are the access parameters the driver knows.
func accessKeys() []string {
	out := []string{AccessConsumerGroupPrefix}
	for _, q := range quotaKeys {
		out = append(out, q.param)
	}
	return out
}

func validGroupPrefix(s string) bool {
	if s == "" || len(s) > maxTopicName {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Open creates the backend's admin client. It does not dial: brokers are
// contacted by the first operation.
func (d *Driver) Open(_ context.Context, backend string, cfg drivers.Config) (drivers.Backend, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("kadm: config is %T, want *kadm.Config", cfg)
	}
	opts, err := c.clientOpts()
	if err != nil {
		return nil, err
	}
	// Owner records (owners.go) are produced through the admin client:
	// acks=all and idempotent (kgo's defaults), lingering as long as the
	// admin batchers do, so that the records of concurrent creates share
	// one Produce request.
	opts = append(opts, kgo.ProducerLinger(d.linger()), kgo.RecordDeliveryTimeout(c.timeout()))
	for _, h := range d.Hooks {
		opts = append(opts, kgo.WithHooks(h))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kadm: backend %s: %w", backend, err)
	}
	return newBackend(backend, c, cl, d.linger(), d.maxBatch()), nil
}
