package kadm

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/Yolean/buckety-controller/drivers"
)

// Access Secrets: what a consumer needs to connect, and on a backend that
// scopes, the access's own SCRAM user (credentials.go).

// Optional Secret keys of a kadm access (declared in secretKeys, schema.go),
// named after the Kafka client properties consumers already set
// (librdkafka's names where Java's differ), so a Secret maps onto a client
// config key-for-key. Added in driver 0.2.0, additively: a plaintext
// backend's Secret is unchanged.
const (
	// SecretSecurityProtocol is Kafka's security.protocol: SSL, SASL_PLAINTEXT
	// or SASL_SSL. Absent for a plaintext backend (Kafka's default,
	// PLAINTEXT).
	SecretSecurityProtocol = "security.protocol"
	// SecretSSLCAPEM is the PEM CA certificates to trust (librdkafka's
	// ssl.ca.pem; Java: ssl.truststore.type=PEM with
	// ssl.truststore.certificates). Present when the backend has tls.ca or
	// tls.caFile.
	SecretSSLCAPEM = "ssl.ca.pem"
	// SecretSASLMechanism is Kafka's sasl.mechanism: PLAIN, SCRAM-SHA-256 or
	// SCRAM-SHA-512. Present when the backend uses SASL.
	SecretSASLMechanism = "sasl.mechanism"
	// SecretSASLUsername and SecretSASLPassword are the backend's own SASL
	// credentials (librdkafka's names), present only with
	// shareCredentials: true.
	SecretSASLUsername = "sasl.username"
	// SecretSASLPassword is the password for SecretSASLUsername.
	SecretSASLPassword = "sasl.password"
)

// securityProtocol is Kafka's security.protocol for the backend's
// connection, "" for plaintext.
func (c *Config) securityProtocol() string {
	switch {
	case c.TLS != nil && c.SASL != nil:
		return "SASL_SSL"
	case c.TLS != nil:
		return "SSL"
	case c.SASL != nil:
		return "SASL_PLAINTEXT"
	}
	return ""
}

// caPEM is the backend's configured CA, nil when it trusts the system roots.
// A caFile is read on every call, so a rotated file reaches new Secrets.
func (c *Config) caPEM() ([]byte, error) {
	switch {
	case c.TLS == nil:
		return nil, nil
	case c.TLS.CAFile != "":
		b, err := os.ReadFile(c.path(c.TLS.CAFile))
		if err != nil {
			return nil, fmt.Errorf("tls.caFile: %w", err)
		}
		return b, nil
	case c.TLS.CA != "":
		return []byte(c.TLS.CA), nil
	}
	return nil, nil
}

// Grant implements drivers.Backend: what a consumer needs to connect, and,
// on a backend that issues per-access credentials (credentials.go,
// Access.Principal set), the access's own SCRAM user and ACLs. The TLS client certificate and key are never
// written, and tls.serverName is not either: consumers verify the
// bootstrap address they are given. The backend's own SASL credentials
// are shared, not the access's, so the grant is not per access
// (ScopingNotImplemented), as on a backend without SASL.
func (b *Backend) Grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	g, err := b.grant(ctx, a)
	if err != nil || len(a.SecretFormats) == 0 {
		return g, err
	}
	if err := renderFormats(a.SecretFormats, g.Data); err != nil {
		return drivers.Grant{}, fmt.Errorf("kadm: backend %s: grant for %s/%s: %w", b.name, a.Namespace, a.Name, err)
	}
	return g, nil
}

// grant is Grant before the secret formats are added.
func (b *Backend) grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	if err := b.checkTopics(a); err != nil {
		return drivers.Grant{}, err
	}
	c := b.cfg
	data := topicKeys(a)
	data[SecretBootstrap] = []byte(c.bootstrap())
	if p := c.securityProtocol(); p != "" {
		data[SecretSecurityProtocol] = []byte(p)
	}
	ca, err := c.caPEM()
	if err != nil {
		return drivers.Grant{}, fmt.Errorf("kadm: backend %s: %w", b.name, err)
	}
	if len(ca) > 0 {
		data[SecretSSLCAPEM] = ca
	}
	if a.Principal != "" {
		return b.grantCredential(ctx, a, data)
	}
	if s := c.SASL; s != nil {
		data[SecretSASLMechanism] = []byte(s.Mechanism)
		if c.mode() == drivers.Shared {
			data[SecretSASLUsername] = []byte(s.Username)
			data[SecretSASLPassword] = []byte(s.Password)
		}
	}
	reason := c.sharedReason(b.name)
	if reason == "" {
		reason = fmt.Sprintf("backend %s did not issue a user for this access", b.name)
	}
	return drivers.Grant{Data: data, Reason: reason}, nil
}

// checkTopics checks the topics of a grant (Access.Resources) and its
// Drop: at least one, each named once, none the owner registry's, each of
// several with a key of its own that makes a Secret key, and none both
// granted and dropped.
func (b *Backend) checkTopics(a drivers.Access) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("kadm: backend %s: grant for %s/%s: "+format, append([]any{b.name, a.Namespace, a.Name}, args...)...)
	}
	topics := a.Resources()
	if len(topics) == 0 {
		// The controller grants only on a resolved name; a Secret
		// without its topic would be worse than none.
		return fail("no topic")
	}
	keys := map[string]bool{}
	for i, r := range a.Several {
		key := drivers.SeveralKey(SecretTopic, r.Key)
		switch {
		case r.Name == "":
			return fail("several[%d] (key %q): no topic", i, r.Key)
		case r.Key == "" || len(validation.IsConfigMapKey(key)) > 0:
			return fail("several[%d] (topic %s): key %q does not make a Secret key (%s)", i, r.Name, r.Key, key)
		case keys[r.Key]:
			return fail("several[%d] (topic %s): key %q named twice", i, r.Name, r.Key)
		}
		keys[r.Key] = true
	}
	granted := map[string]bool{}
	for _, t := range topics {
		if granted[t] {
			return fail("topic %s named twice", t)
		}
		granted[t] = true
		if err := b.refuseRegistry(t); err != nil {
			// No access is ever granted a right on the owner registry.
			return err
		}
	}
	for _, t := range a.Drop {
		if granted[t] {
			return fail("topic %s is both granted and dropped", t)
		}
	}
	return nil
}

// topicKeys are the Secret keys naming an access's topics: topic for an
// access naming one Buckety; topics and topic.<key> of each for one
// naming several.
func topicKeys(a drivers.Access) map[string][]byte {
	if len(a.Several) == 0 {
		return map[string][]byte{SecretTopic: []byte(a.Resource)}
	}
	data := map[string][]byte{SecretTopics: []byte(drivers.SeveralList(a.Resources()))}
	for _, r := range a.Several {
		data[drivers.SeveralKey(SecretTopic, r.Key)] = []byte(r.Name)
	}
	return data
}

// Revoke implements drivers.Backend: a per-access credential's ACLs (every
// ALLOW ACL of the user, so those on every topic of an access naming
// several), then its user; an access on shared credentials has nothing to
// revoke.
func (b *Backend) Revoke(ctx context.Context, a drivers.Access) error {
	if a.Principal == "" {
		return nil
	}
	return b.revokeCredential(ctx, a.Principal)
}
