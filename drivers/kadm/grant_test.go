package kadm

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// TestGrantConnections checks the Secret for every way a backend connects: a consumer
// gets exactly the keys it needs to connect as the backend does, the SASL
// credentials only when the maintainer shares them, and a grant without a
// principal of the access's own (credentials.go) is never reported as per
// access.
func TestGrantConnections(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), []byte(testCA), 0o600); err != nil {
		t.Fatal(err)
	}
	sasl := func() *SASL { return &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"} }
	for _, tc := range []struct {
		name   string
		cfg    Config
		access drivers.Access
		want   map[string]string
	}{
		{
			name: "plaintext: unchanged from 0.1",
			cfg:  Config{SeedBrokers: []string{"k0:9092", "k1:9092"}},
			want: map[string]string{"bootstrap": "k0:9092,k1:9092", "topic": "orders"},
		},
		{
			name: "public bootstrap wins over seedBrokers",
			cfg:  Config{SeedBrokers: []string{"k0:9092"}, Bootstrap: "kafka.example.com:9093", TLS: &TLS{}},
			want: map[string]string{"bootstrap": "kafka.example.com:9093", "topic": "orders", "security.protocol": "SSL"},
		},
		{
			name: "TLS with a CA file relative to the config dir",
			cfg:  Config{SeedBrokers: []string{"k0:9093"}, TLS: &TLS{CAFile: "ca.pem", ServerName: "kafka.internal"}, dir: dir},
			want: map[string]string{"bootstrap": "k0:9093", "topic": "orders", "security.protocol": "SSL", "ssl.ca.pem": testCA},
		},
		{
			name: "mutual TLS: the client key is never handed out",
			cfg:  Config{SeedBrokers: []string{"k0:9093"}, TLS: &TLS{CA: testCA, Cert: "CERT", Key: "KEY"}},
			want: map[string]string{"bootstrap": "k0:9093", "topic": "orders", "security.protocol": "SSL", "ssl.ca.pem": testCA},
		},
		{
			name: "SASL without sharing: the mechanism, no credentials",
			cfg:  Config{SeedBrokers: []string{"k0:9092"}, SASL: sasl()},
			want: map[string]string{"bootstrap": "k0:9092", "topic": "orders", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"},
		},
		{
			name: "SASL with sharing: the backend's credentials, unscoped",
			cfg:  Config{SeedBrokers: []string{"k0:9092"}, SASL: sasl(), ShareCredentials: true},
			want: map[string]string{"bootstrap": "k0:9092", "topic": "orders", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
				"sasl.username": "buckety", "sasl.password": "s3cr3t"},
		},
		{
			name: "SASL with credentials.mode Shared: as with shareCredentials",
			cfg:  Config{SeedBrokers: []string{"k0:9092"}, SASL: sasl(), Credentials: &Credentials{Mode: drivers.Shared}},
			want: map[string]string{"bootstrap": "k0:9092", "topic": "orders", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
				"sasl.username": "buckety", "sasl.password": "s3cr3t"},
		},
		{
			name: "SASL over TLS with sharing",
			cfg:  Config{SeedBrokers: []string{"k0:9093"}, TLS: &TLS{CA: testCA}, SASL: sasl(), ShareCredentials: true},
			want: map[string]string{"bootstrap": "k0:9093", "topic": "orders", "security.protocol": "SASL_SSL", "ssl.ca.pem": testCA, "sasl.mechanism": "SCRAM-SHA-512",
				"sasl.username": "buckety", "sasl.password": "s3cr3t"},
		},
		{
			name: "SASL over TLS without sharing, system roots",
			cfg:  Config{SeedBrokers: []string{"k0:9093"}, TLS: &TLS{}, SASL: sasl()},
			want: map[string]string{"bootstrap": "k0:9093", "topic": "orders", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"},
		},
		{
			name:   "a Read role is not enforced, whatever the connection",
			cfg:    Config{SeedBrokers: []string{"k0:9092"}, SASL: sasl()},
			access: drivers.Access{Role: "Read"},
			want:   map[string]string{"bootstrap": "k0:9092", "topic": "orders", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			b := &Backend{name: "kafka", cfg: &cfg}
			a := tc.access
			a.Resource = "orders"
			g, err := b.Grant(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range g.Data {
				got[k] = string(v)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("want Secret data %v, got %v", tc.want, got)
			}
			if g.PerAccess || g.Reason == "" {
				t.Errorf("want a grant without a principal unscoped, with the reason, got Scoped %v, Reason %q", g.PerAccess, g.Reason)
			}
		})
	}
}

// TestGrantCAFileUnreadable: a CA file that went missing fails the grant
// with the field named, instead of a Secret without the CA.
func TestGrantCAFileUnreadable(t *testing.T) {
	b := &Backend{name: "kafka", cfg: &Config{SeedBrokers: []string{"k0:9093"}, TLS: &TLS{CAFile: filepath.Join(t.TempDir(), "gone.pem")}}}
	_, err := b.Grant(context.Background(), drivers.Access{Resource: "orders"})
	if err == nil || !strings.Contains(err.Error(), "tls.caFile") || !strings.Contains(err.Error(), "backend kafka") {
		t.Fatalf("want an error naming backend kafka and tls.caFile, got %v", err)
	}
}

// TestGrantKeysDeclared holds Grant to secretKeys, the kadm Secret's one
// declaration, at both ends of the ways a backend connects: a plaintext
// backend's Secret has the keys every Secret has, and a TLS+SASL backend
// that shares its credentials writes every declared key of its shape (one
// topic, or several). (The conformance suite checks the declaration
// itself, and the Secret of a real broker.)
func TestGrantKeysDeclared(t *testing.T) {
	full := &Config{SeedBrokers: []string{"k0:9093"}, TLS: &TLS{CA: testCA}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, ShareCredentials: true}
	one := drivers.Access{Resource: "t"}
	several := drivers.Access{Resource: "t", Several: []drivers.AccessResource{{Key: "a", Name: "t"}, {Key: "b", Name: "u"}}}
	for _, cfg := range []*Config{{SeedBrokers: []string{"k0:9092"}}, full} {
		for _, a := range []drivers.Access{one, several} {
			g, err := (&Backend{name: "kafka", cfg: cfg}).Grant(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			drivertest.CheckGrant(t, secretKeys, g)
			if cfg != full {
				continue
			}
			// Every declared key of the shape but the group prefix, which
			// only a per-access grant has (TestScopedRoles checks that Secret).
			for _, k := range secretKeys {
				want := true
				switch {
				case k.Name == SecretGroupPrefix:
					want = false
				case k.PerResource, k.Name == SecretTopics:
					want = a.Several != nil
				case k.Name == SecretTopic:
					want = a.Several == nil
				}
				if got := slices.ContainsFunc(slices.Collect(maps.Keys(g.Data)), k.IsKey); got != want {
					t.Errorf("%d resources: want key %s (per resource %v) %v, got %v: %v", len(a.Resources()), k.Name, k.PerResource, want, got, slices.Sorted(maps.Keys(g.Data)))
				}
			}
		}
	}
}
