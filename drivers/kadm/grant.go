package kadm

import (
	"context"
	"fmt"
	"os"

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
// on a backend that scopes (credentials.go, Access.Principal set), the access's
// own SCRAM user and ACLs. The TLS client certificate and key are never
// written, and tls.serverName is not either: consumers verify the
// bootstrap address they are given. Shared SASL credentials are not
// scoped to the access, so they make the grant unscoped
// (ScopingNotImplemented), as a backend without SASL does.
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
	if a.Resource == "" {
		// The controller grants only on a resolved name; a Secret
		// without its topic would be worse than none.
		return drivers.Grant{}, fmt.Errorf("kadm: backend %s: grant for %s/%s: no topic", b.name, a.Namespace, a.Name)
	}
	if err := b.refuseRegistry(a.Resource); err != nil {
		// No access is ever granted a right on the owner registry.
		return drivers.Grant{}, err
	}
	c := b.cfg
	data := map[string][]byte{
		SecretBootstrap: []byte(c.bootstrap()),
		SecretTopic:     []byte(a.Resource),
	}
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

// Revoke implements drivers.Backend: a per-access credential's ACLs,
// then its user; an access on shared credentials has nothing to revoke.
func (b *Backend) Revoke(ctx context.Context, a drivers.Access) error {
	if a.Principal == "" {
		return nil
	}
	return b.revokeCredential(ctx, a.Principal)
}
