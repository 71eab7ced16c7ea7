package kadm

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// DefaultRequestTimeout bounds each admin operation when requestTimeout is
// not set. It is a connection setting, not a resource default.
const DefaultRequestTimeout = 15 * time.Second

// Config is the `config:` block of a kadm backend in buckety-controller.yaml.
type Config struct {
	// SeedBrokers are the host:port addresses the controller uses to reach
	// the cluster's admin API. Required. An entry may hold several,
	// comma-separated, and may come from the environment (${KAFKA_BOOTSTRAP}).
	SeedBrokers []string `json:"seedBrokers" envsubst:"true"`
	// ClientID is the Kafka client.id the controller identifies as.
	ClientID string `json:"clientID,omitempty"`
	// Bootstrap is the comma-separated bootstrap address written to access
	// Secrets, for when consumers must use another address than the
	// controller. Defaults to seedBrokers joined by commas.
	Bootstrap string `json:"bootstrap,omitempty" envsubst:"true"`
	// RequestTimeout bounds each admin operation, connection attempts
	// included. Defaults to 15s.
	RequestTimeout drivers.Duration `json:"requestTimeout,omitzero"`
	// TLS enables TLS to the brokers when present.
	TLS *TLS `json:"tls,omitempty"`
	// SASL enables SASL authentication when present.
	SASL *SASL `json:"sasl,omitempty"`
	// ShareCredentials is the older spelling of credentials.mode: Shared,
	// and still means it: every access gets the backend's own SASL user.
	// Requires sasl; contradicts credentials.mode: PerAccess.
	ShareCredentials bool `json:"shareCredentials,omitempty"`
	// Credentials says whether each access gets a SCRAM user of its own
	// (mode PerAccess, on a cluster with an authorizer and the SCRAM admin
	// API, KIP-554) or the backend's own SASL user (mode Shared), and
	// tunes the users issued. Both need sasl. Mode not set: PerAccess with
	// sasl, Shared with shareCredentials, as before the mode existed (and
	// the controller says so at startup); without sasl accesses get no
	// credentials.
	Credentials *Credentials `json:"credentials,omitempty"`
	// Quotas bounds the Kafka client quotas an access may ask for on its
	// own user (producerByteRate, consumerByteRate, requestPercentage,
	// controllerMutationRate) and gives every per-access user defaults for
	// those it does not set. Only for backends that issue a user per
	// access: credentials mode PerAccess.
	Quotas *Quotas `json:"quotas,omitempty"`
	// OwnerRegistry configures the topic where buckety records which
	// installation owns each topic it created (owners.go). Defaults apply
	// when absent.
	OwnerRegistry *OwnerRegistry `json:"ownerRegistry,omitempty"`

	dir string
}

// DefaultOwnerRegistryTopic is the owner registry's topic when
// ownerRegistry.topic is not set.
const DefaultOwnerRegistryTopic = "__buckety-owners"

// OwnerRegistry configures the owner registry: a compacted topic, keyed by
// topic name, holding the owner record (JSON) of every topic an
// installation of buckety created on the cluster. Kafka refuses topic
// configs it does not know, so a record cannot travel with its topic.
// Every installation pointed at one cluster must use the same topic. Only
// the backend's own (admin) user reads or writes it: no access is ever
// granted a right on it, and no Buckety may name it.
type OwnerRegistry struct {
	// Topic is the registry's topic, created on first use (one partition,
	// cleanup.policy=compact, the broker's default replication factor).
	// Defaults to __buckety-owners. It must start with "__", a prefix no
	// Buckety's topic can have, so that no topic buckety created earlier,
	// and no access's ACL on one, can be the registry.
	Topic string `json:"topic,omitempty"`
}

// registryTopic is the owner registry's topic.
func (c *Config) registryTopic() string {
	if c != nil && c.OwnerRegistry != nil && c.OwnerRegistry.Topic != "" {
		return c.OwnerRegistry.Topic
	}
	return DefaultOwnerRegistryTopic
}

// Credentials configures the credentials of accesses.
type Credentials struct {
	// Mode is PerAccess (a SCRAM user per access) or Shared (every access
	// gets the backend's own SASL user and reports
	// ScopingNotImplemented). Both require sasl. Not set: inferred from
	// sasl and shareCredentials, as before.
	Mode drivers.CredentialsMode `json:"mode,omitempty" jsonschema:"enum=PerAccess,enum=Shared"`
	// Mechanism of the issued users' passwords: SCRAM-SHA-512 (the
	// default) or SCRAM-SHA-256. Consumers authenticate with it
	// (sasl.mechanism in the Secret). Changing it moves every issued user
	// to the new mechanism when the controller restarts: each access's
	// password is set on the new one and deleted from the old one, so
	// connections with the old mechanism are refused from then on.
	Mechanism string `json:"mechanism,omitempty" jsonschema:"enum=SCRAM-SHA-512,enum=SCRAM-SHA-256"`
}

// TLS configures TLS to the brokers. Certificates are given either as files
// or as PEM text (typically ${VAR} from a Secret-backed env var), not both.
type TLS struct {
	// CAFile is a PEM file of CA certificates to trust instead of the
	// system roots.
	CAFile string `json:"caFile,omitempty" file:"true"`
	// CA is PEM text of CA certificates to trust instead of the system roots.
	CA string `json:"ca,omitempty" envsubst:"true"`
	// CertFile and KeyFile are a PEM client certificate and key for mutual TLS.
	CertFile string `json:"certFile,omitempty" file:"true"`
	// KeyFile is the PEM client key for CertFile.
	KeyFile string `json:"keyFile,omitempty" file:"true"`
	// Cert is PEM text of a client certificate for mutual TLS.
	Cert string `json:"cert,omitempty" envsubst:"true"`
	// Key is PEM text of the client key for Cert.
	Key string `json:"key,omitempty" envsubst:"true" credential:"true"`
	// ServerName overrides the name verified in the brokers' certificates.
	ServerName string `json:"serverName,omitempty"`
}

// SASL configures SASL authentication.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `json:"mechanism" jsonschema:"enum=PLAIN,enum=SCRAM-SHA-256,enum=SCRAM-SHA-512"`
	// Username to authenticate as.
	Username string `json:"username" envsubst:"true"`
	// Password for Username.
	Password string `json:"password" envsubst:"true" credential:"true"`
}

// SASL mechanisms the driver supports.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// SetDir resolves relative certificate paths against the config directory.
func (c *Config) SetDir(abs string) { c.dir = abs }

func (c *Config) path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

// Validate implements drivers.Config.
func (c *Config) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(c.SeedBrokers) == 0 {
		errs = append(errs, field.Required(p.Child("seedBrokers"), "list at least one host:port of the Kafka cluster"))
	}
	for i, entry := range c.SeedBrokers {
		for _, b := range strings.Split(entry, ",") {
			if err := validHostPort(strings.TrimSpace(b)); err != nil {
				errs = append(errs, field.Invalid(p.Child("seedBrokers").Index(i), entry, err.Error()))
				break
			}
		}
	}
	if c.Bootstrap != "" {
		for _, b := range strings.Split(c.Bootstrap, ",") {
			if err := validHostPort(strings.TrimSpace(b)); err != nil {
				errs = append(errs, field.Invalid(p.Child("bootstrap"), c.Bootstrap, "want comma-separated host:port: "+err.Error()))
				break
			}
		}
	}
	if c.RequestTimeout.Duration < 0 {
		errs = append(errs, field.Invalid(p.Child("requestTimeout"), c.RequestTimeout.String(), "must be positive"))
	}
	if t := c.TLS; t != nil {
		tp := p.Child("tls")
		if t.CAFile != "" && t.CA != "" {
			errs = append(errs, field.Forbidden(tp.Child("ca"), "set caFile or ca, not both"))
		}
		if (t.CertFile != "" || t.KeyFile != "") && (t.Cert != "" || t.Key != "") {
			errs = append(errs, field.Forbidden(tp.Child("cert"), "set certFile/keyFile or cert/key, not both"))
		}
		if (t.CertFile == "") != (t.KeyFile == "") {
			errs = append(errs, field.Required(tp.Child("keyFile"), "certFile and keyFile go together"))
		}
		if (t.Cert == "") != (t.Key == "") {
			errs = append(errs, field.Required(tp.Child("key"), "cert and key go together"))
		}
		if len(errs) == 0 {
			if _, err := c.tlsConfig(); err != nil {
				errs = append(errs, field.Invalid(tp, field.OmitValueType{}, err.Error()))
			}
		}
	}
	if s := c.SASL; s != nil {
		sp := p.Child("sasl")
		if !contains(saslMechanisms, s.Mechanism) {
			errs = append(errs, field.NotSupported(sp.Child("mechanism"), s.Mechanism, saslMechanisms))
		}
		if s.Username == "" {
			errs = append(errs, field.Required(sp.Child("username"), "the SASL user the controller authenticates as"))
		}
		if s.Password == "" {
			errs = append(errs, field.Required(sp.Child("password"), "set it from a Secret-backed env var, as ${KAFKA_PASSWORD}"))
		}
	}
	errs = append(errs, c.validateCredentials(p)...)
	if r := c.OwnerRegistry; r != nil && r.Topic != "" {
		tp := p.Child("ownerRegistry", "topic")
		if !strings.HasPrefix(r.Topic, "__") {
			errs = append(errs, field.Invalid(tp, r.Topic, `must start with "__": a name no Buckety's topic can have, so that no tenant topic or ACL can be the registry`))
		}
		_, nameErrs := validTopicName(tp, r.Topic)
		for _, e := range nameErrs {
			if !strings.Contains(e.Detail, "reserved for Kafka's internal topics") {
				errs = append(errs, e)
			}
		}
	}
	return append(errs, c.validateQuotas(p.Child("quotas"))...)
}

// validateCredentials checks credentials and shareCredentials together.
func (c *Config) validateCredentials(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.ShareCredentials && c.SASL == nil {
		errs = append(errs, field.Invalid(p.Child("shareCredentials"), true, "there are no credentials to share without sasl: only SASL credentials are shared (a TLS client key never is); remove shareCredentials or configure sasl"))
	}
	cr := c.Credentials
	if cr == nil {
		return errs
	}
	cp := p.Child("credentials")
	if err := drivers.ValidateCredentialsMode(cp.Child("mode"), cr.Mode); err != nil {
		errs = append(errs, err)
	}
	if cr.Mechanism != "" && cr.Mechanism != "SCRAM-SHA-512" && cr.Mechanism != "SCRAM-SHA-256" {
		errs = append(errs, field.NotSupported(cp.Child("mechanism"), cr.Mechanism, []string{"SCRAM-SHA-512", "SCRAM-SHA-256"}))
	}
	switch {
	case cr.Mode == drivers.PerAccess && c.ShareCredentials:
		errs = append(errs, field.Invalid(cp.Child("mode"), cr.Mode, "shareCredentials: true means credentials.mode: Shared: remove shareCredentials for a SCRAM user per access"))
	case (cr.Mode == drivers.PerAccess || cr.Mode == drivers.Shared) && c.SASL == nil:
		errs = append(errs, field.Invalid(cp.Child("mode"), cr.Mode, "needs sasl: the backend's own SASL user is the one shared, and the one that issues users per access; without sasl accesses get no credentials, so remove credentials.mode or configure sasl"))
	case c.mode() == drivers.Shared && cr.Mechanism != "":
		errs = append(errs, field.Forbidden(cp.Child("mechanism"), "with credentials.mode Shared (or shareCredentials) no users are issued, so their mechanism is not read: remove it"))
	}
	return errs
}

// mode is the backend's credentials mode: credentials.mode when set,
// otherwise as before the mode existed (Shared with shareCredentials,
// PerAccess with sasl); "" without sasl, where accesses get no
// credentials.
func (c *Config) mode() drivers.CredentialsMode {
	switch {
	case c.SASL == nil:
		return ""
	case c.Credentials != nil && c.Credentials.Mode != "":
		return c.Credentials.Mode
	case c.ShareCredentials:
		return drivers.Shared
	}
	return drivers.PerAccess
}

// Notices implements drivers.Noticer: the mode inferred when
// credentials.mode is not set.
func (c *Config) Notices() []string {
	if c.Credentials != nil && c.Credentials.Mode != "" {
		return nil
	}
	switch c.mode() {
	case drivers.Shared:
		return []string{drivers.ModeNotice(drivers.Shared, "shareCredentials: true")}
	case drivers.PerAccess:
		return []string{drivers.ModeNotice(drivers.PerAccess, "sasl without shareCredentials")}
	}
	return nil
}

func validHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want host:port: %v", err)
	}
	if host == "" {
		return fmt.Errorf("want host:port: host is empty")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want host:port: port %q is not 1-65535", port)
	}
	return nil
}

func (c *Config) timeout() time.Duration {
	if c.RequestTimeout.Duration > 0 {
		return c.RequestTimeout.Duration
	}
	return DefaultRequestTimeout
}

func (c *Config) bootstrap() string {
	if c.Bootstrap != "" {
		return c.Bootstrap
	}
	return strings.Join(c.brokers(), ",")
}

// brokers is SeedBrokers with comma-separated entries split.
func (c *Config) brokers() []string {
	var out []string
	for _, entry := range c.SeedBrokers {
		for _, b := range strings.Split(entry, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

func (c *Config) tlsConfig() (*tls.Config, error) {
	t := c.TLS
	if t == nil {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	ca := []byte(t.CA)
	if t.CAFile != "" {
		b, err := os.ReadFile(c.path(t.CAFile))
		if err != nil {
			return nil, fmt.Errorf("caFile: %v", err)
		}
		ca = b
	}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("ca: no PEM certificate found")
		}
		cfg.RootCAs = pool
	}
	switch {
	case t.CertFile != "":
		pair, err := tls.LoadX509KeyPair(c.path(t.CertFile), c.path(t.KeyFile))
		if err != nil {
			return nil, fmt.Errorf("certFile/keyFile: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case t.Cert != "" && t.Key != "":
		pair, err := tls.X509KeyPair([]byte(t.Cert), []byte(t.Key))
		if err != nil {
			return nil, fmt.Errorf("cert/key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// clientOpts builds the kgo options for the admin client.
func (c *Config) clientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.brokers()...),
		kgo.DialTimeout(c.timeout()),
		kgo.RequestTimeoutOverhead(c.timeout()),
		kgo.RetryTimeoutFn(c.retryTimeout),
		// Admin reads must see topics created moments ago.
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	tc, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if s := c.SASL; s != nil {
		switch s.Mechanism {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()))
		}
	}
	return opts, nil
}

// retryTimeout bounds how long the client may send a request again:
// the request timeout, except for CreateTopics, which is sent once. Were
// a create's answer lost (a reset connection) and the client to send it
// again, the second answer, TOPIC_ALREADY_EXISTS, would pass buckety's
// own create off as someone else's, and a create-only call would hand
// the topic to the adoption check; the error reports an unknown outcome
// instead, and the next pass, on a claim already recorded, reads the
// topic and converges it. (kgo retries while the time since the first
// try stays within this; 0 would mean no limit, so 1ns.)
func (c *Config) retryTimeout(key int16) time.Duration {
	if key == kmsg.CreateTopics.Int16() {
		return time.Nanosecond
	}
	return c.timeout()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// saslPrincipal is the Kafka principal the backend logs in as with SASL
// (User:NAME, as kafka-acls names it), "" without SASL: a mutual TLS
// principal is what the brokers' mapping of the certificate makes, which
// the backend does not know.
func (c *Config) saslPrincipal() string {
	if c.SASL == nil || c.SASL.Username == "" {
		return ""
	}
	return "User:" + c.SASL.Username
}
