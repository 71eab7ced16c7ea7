package kadm

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/pki"
)

// TestSASL runs the driver against brokers that require each supported SASL
// mechanism, and checks a wrong password is refused (and not reported as
// the broker being down).
func TestSASL(t *testing.T) {
	for _, mech := range saslMechanisms {
		t.Run(mech, func(t *testing.T) {
			f := newFixture(t, kafka.Options{SASL: []string{mech + ":buckety:s3cr3t"}}, func(c *Config) {
				c.SASL = &SASL{Mechanism: mech, Username: "buckety", Password: "s3cr3t"}
			})
			f.ensure(t, "sasl-topic", map[string]string{"config.retention.ms": "1000"})
			if _, _, dyn := f.state(t, "sasl-topic"); dyn["retention.ms"] != "1000" {
				t.Errorf("want retention.ms 1000 over %s, got %v", mech, dyn)
			}
			bad := &Config{SeedBrokers: f.broker.Addrs, RequestTimeout: drivers.Duration{Duration: 3 * time.Second},
				SASL: &SASL{Mechanism: mech, Username: "buckety", Password: "wrong"}}
			be, err := New().Open(context.Background(), "kafka", bad)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			// kfake drops the connection on a failed authentication where
			// Kafka answers SASL_AUTHENTICATION_FAILED first; either way the
			// request must fail (TestClassify covers Kafka's answer).
			if _, err = be.Ensure(context.Background(), drivers.Resource{Name: "nope"}); err == nil {
				t.Fatal("want a wrong password refused")
			}
		})
	}
}

func TestClassify(t *testing.T) {
	b := &Backend{name: "kafka"}
	for _, err := range []error{kerr.SaslAuthenticationFailed, fmt.Errorf("create: %w", kerr.TopicAuthorizationFailed)} {
		if got := b.classify(err); !drivers.IsAccessDenied(got) {
			t.Errorf("%v: want *drivers.AccessDeniedError, got %T", err, got)
		}
	}
	for _, err := range []error{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, context.DeadlineExceeded, io.EOF} {
		if got := b.classify(err); !drivers.IsUnavailable(got) {
			t.Errorf("%v: want *drivers.UnavailableError, got %T", err, got)
		}
	}
	for _, err := range []error{kerr.InvalidReplicationFactor, kerr.PolicyViolation} {
		if got := b.classify(err); drivers.IsUnavailable(got) || drivers.IsAccessDenied(got) {
			t.Errorf("%v: want a plain request error, got %T", err, got)
		}
	}
}

// TestTLS runs the driver against a TLS broker, with the CA given as a file
// (relative to the config directory) and as PEM text, and checks an
// untrusted CA fails.
func TestTLS(t *testing.T) {
	ca, err := pki.NewCA("kafka-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue("localhost", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"ca.pem": ca.CertPEM, "tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	opts := kafka.Options{TLSCert: filepath.Join(dir, "tls.crt"), TLSKey: filepath.Join(dir, "tls.key")}
	t.Run("caFile relative to the config dir", func(t *testing.T) {
		f := newFixture(t, opts, func(c *Config) { c.SetDir(dir); c.TLS = &TLS{CAFile: "ca.pem"} })
		f.ensure(t, "tls-topic", nil)
	})
	t.Run("ca as PEM text", func(t *testing.T) {
		f := newFixture(t, opts, func(c *Config) { c.TLS = &TLS{CA: string(ca.CertPEM)} })
		f.ensure(t, "tls-topic", nil)

		other, err := pki.NewCA("other")
		if err != nil {
			t.Fatal(err)
		}
		be, err := New().Open(context.Background(), "kafka", &Config{SeedBrokers: f.broker.Addrs, RequestTimeout: drivers.Duration{Duration: 2 * time.Second}, TLS: &TLS{CA: string(other.CertPEM)}})
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		if _, err := be.Ensure(context.Background(), drivers.Resource{Name: "x"}); err == nil {
			t.Fatal("want a broker certificate from an untrusted CA refused")
		}
	})
}
