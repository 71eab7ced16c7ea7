package kadm

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

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
			_, err = be.Ensure(context.Background(), drivers.Resource{Name: "nope"})
			if err == nil {
				t.Fatal("want a wrong password refused")
			}
		})
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
