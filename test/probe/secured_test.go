package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	testkafka "github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/pki"
)

// TestKafkaSecuredBrokers runs the probe in-process against real TLS and
// SASL brokers (the kfake broker process), configured only from the Secret
// the kadm driver grants: it must connect with the whole Secret, and fail
// with only the keys driver 0.1 wrote (bootstrap, topic).
func TestKafkaSecuredBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	ca, err := pki.NewCA("kafka-ca")
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Issue("localhost", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tlsOpts := testkafka.Options{TLSCert: filepath.Join(dir, "tls.crt"), TLSKey: filepath.Join(dir, "tls.key")}
	for _, tc := range []struct {
		name   string
		broker testkafka.Options
		config func(*kadmdriver.Config)
		// wantProtocol is the Secret's security.protocol.
		wantProtocol string
	}{
		{
			name:         "TLS",
			broker:       tlsOpts,
			config:       func(c *kadmdriver.Config) { c.TLS = &kadmdriver.TLS{CA: string(ca.CertPEM)} },
			wantProtocol: "SSL",
		},
		{
			name:   "SASL SCRAM-SHA-256, credentials shared",
			broker: testkafka.Options{SASL: []string{"SCRAM-SHA-256:buckety:s3cr3t"}},
			config: func(c *kadmdriver.Config) {
				c.SASL = &kadmdriver.SASL{Mechanism: "SCRAM-SHA-256", Username: "buckety", Password: "s3cr3t"}
				c.ShareCredentials = true
			},
			wantProtocol: "SASL_PLAINTEXT",
		},
		{
			name:   "SASL PLAIN, credentials shared",
			broker: testkafka.Options{SASL: []string{"PLAIN:buckety:s3cr3t"}},
			config: func(c *kadmdriver.Config) {
				c.SASL = &kadmdriver.SASL{Mechanism: "PLAIN", Username: "buckety", Password: "s3cr3t"}
				c.ShareCredentials = true
			},
			wantProtocol: "SASL_PLAINTEXT",
		},
		{
			name:   "SASL SCRAM-SHA-512 over TLS, credentials shared",
			broker: testkafka.Options{TLSCert: tlsOpts.TLSCert, TLSKey: tlsOpts.TLSKey, SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}},
			config: func(c *kadmdriver.Config) {
				c.TLS = &kadmdriver.TLS{CA: string(ca.CertPEM)}
				c.SASL = &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
				c.ShareCredentials = true
			},
			wantProtocol: "SASL_SSL",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testkafka.Start(t, tc.broker)
			cfg := &kadmdriver.Config{SeedBrokers: b.Addrs, RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
			tc.config(cfg)
			if errs := cfg.Validate(field.NewPath("config")); len(errs) > 0 {
				t.Fatalf("config: %v", errs)
			}
			be, err := kadmdriver.New().Open(context.Background(), "kafka", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			// Backstops that end a hung test, not speed goals.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := be.Ensure(ctx, drivers.Resource{Name: "probe-topic"}); err != nil {
				t.Fatalf("ensure: %v", err)
			}
			g, err := be.Grant(ctx, drivers.Access{Resource: "probe-topic", Role: "ReadWrite"})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(g.Data[kadmdriver.SecretSecurityProtocol]); got != tc.wantProtocol {
				t.Fatalf("want security.protocol %s, got %q", tc.wantProtocol, got)
			}
			secret := func(keys map[string][]byte) func(string) string {
				return func(k string) string { return string(keys[k]) }
			}

			t.Run("with only bootstrap and topic it cannot connect", func(t *testing.T) {
				old := map[string][]byte{"bootstrap": g.Data["bootstrap"], "topic": g.Data["topic"]}
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
				defer cancel()
				if err := kafka(ctx, secret(old)); err == nil {
					t.Fatal("want the probe to fail without the connection keys, got success")
				}
			})
			t.Run("with the whole Secret it produces and consumes", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				if err := kafka(ctx, secret(g.Data)); err != nil {
					t.Fatalf("want the probe to connect with the Secret %v, got %v", keysOf(g.Data), err)
				}
			})
			if cfg.SASL != nil {
				t.Run("without the shared credentials it names what is missing", func(t *testing.T) {
					noCreds := map[string][]byte{}
					for k, v := range g.Data {
						if k != kadmdriver.SecretSASLUsername && k != kadmdriver.SecretSASLPassword {
							noCreds[k] = v
						}
					}
					err := kafka(context.Background(), secret(noCreds))
					if err == nil || !strings.Contains(err.Error(), "sasl.username, sasl.password") {
						t.Fatalf("want an error naming sasl.username and sasl.password, got %v", err)
					}
				})
			}
		})
	}
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestKafkaProbeRoles runs the probe per role against a broker that
// enforces ACLs, with Secrets the kadm driver minted: each role does what
// it may and is refused what it may not; a probe asking a ReadOnly Secret
// to write fails.
func TestKafkaProbeRoles(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	be := scopedBackend(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := be.Ensure(ctx, drivers.Resource{Name: "roles"}); err != nil {
		t.Fatal(err)
	}
	sc := be.(drivers.CredentialIssuer)
	grant := func(role string) func(string) string {
		a := drivers.Access{Resource: "roles", Namespace: "team", Name: strings.ToLower(role), UID: "uid-" + role, Role: drivers.Role(role), Assert: drivers.IssueNew}
		a.Principal = sc.Principal(a, 1)
		g, err := be.Grant(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return func(k string) string {
			if k == "PROBE_ROLE" {
				return role
			}
			return string(g.Data[k])
		}
	}
	rw, ro, wo := grant("ReadWrite"), grant("ReadOnly"), grant("WriteOnly")
	for _, tc := range []struct {
		name string
		env  func(string) string
	}{{"ReadWrite", rw}, {"WriteOnly", wo}, {"ReadOnly", ro}} {
		if err := kafka(ctx, tc.env); err != nil {
			t.Errorf("%s: want the probe to pass, got %v", tc.name, err)
		}
	}
	// Data kept between probes: a writer's PROBE_VALUE is what a later
	// reader's PROBE_KEPT finds, with another Secret; a value never
	// written is not found.
	with := func(env func(string) string, key, value string) func(string) string {
		return func(k string) string {
			if k == key {
				return value
			}
			return env(k)
		}
	}
	if err := kafka(ctx, with(wo, "PROBE_VALUE", "kept-1")); err != nil {
		t.Errorf("WriteOnly with PROBE_VALUE: want the probe to pass, got %v", err)
	}
	for name, env := range map[string]func(string) string{"ReadWrite": rw, "ReadOnly": ro} {
		if err := kafka(ctx, with(env, "PROBE_KEPT", "kept-1")); err != nil {
			t.Errorf("%s with PROBE_KEPT: want it to find the record kept, got %v", name, err)
		}
	}
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	if err := kafka(short, with(rw, "PROBE_KEPT", "never-written")); err == nil || !strings.Contains(err.Error(), `the record kept from before: consume topic roles: record "never-written" not read back in time`) {
		t.Errorf("PROBE_KEPT of a value never written: want it not found, got %v", err)
	}
	stop()
	if err := kafka(ctx, with(wo, "PROBE_KEPT", "kept-1")); err == nil || !strings.Contains(err.Error(), "a WriteOnly probe cannot read it back") {
		t.Errorf("WriteOnly with PROBE_KEPT: want it refused, got %v", err)
	}
	asWriter := func(k string) string {
		if k == "PROBE_ROLE" {
			return "ReadWrite"
		}
		return ro(k)
	}
	if _, err := be.Ensure(ctx, drivers.Resource{Name: "neighbour"}); err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string]func(string) string{"ReadOnly": ro, "WriteOnly": wo} {
		onNeighbour := func(k string) string {
			switch k {
			case "PROBE_TOPIC":
				return "neighbour"
			case "PROBE_EXPECT_REFUSED":
				return "true"
			}
			return env(k)
		}
		if err := kafka(ctx, onNeighbour); err == nil || !strings.Contains(err.Error(), "AUTHORIZATION_FAILED") {
			t.Errorf("%s on the neighbour's topic: want an authorization refusal, got %v", name, err)
		}
	}
	outsidePrefix := func(k string) string {
		switch k {
		case "PROBE_GROUP":
			return "someone-elses-group"
		case "PROBE_EXPECT_REFUSED":
			return "true"
		}
		return ro(k)
	}
	if err := kafka(ctx, outsidePrefix); err == nil || !strings.Contains(err.Error(), "GROUP_AUTHORIZATION_FAILED") {
		t.Errorf("ReadOnly in a group outside its prefix: want GROUP_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := kafka(ctx, asWriter); err == nil || !strings.Contains(err.Error(), "TOPIC_AUTHORIZATION_FAILED") && !strings.Contains(err.Error(), "CLUSTER_AUTHORIZATION_FAILED") {
		t.Errorf("a ReadOnly Secret probed as ReadWrite: want the produce refused, got %v", err)
	}
}

// TestKafkaProbeRefusedLogin: a probe expecting refusal, with a Secret whose
// user was revoked or whose password is no longer the user's, fails at
// once with the failed login (the e2e scenarios match its log).
func TestKafkaProbeRefusedLogin(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	be := scopedBackend(t)
	ctx := context.Background()
	if _, err := be.Ensure(ctx, drivers.Resource{Name: "logins"}); err != nil {
		t.Fatal(err)
	}
	a := drivers.Access{Resource: "logins", Namespace: "team", Name: "w", UID: "uid-w", Role: "ReadWrite", Assert: drivers.IssueNew}
	a.Principal = be.(drivers.CredentialIssuer).Principal(a, 1)
	g, err := be.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	env := func(data map[string][]byte) func(string) string {
		return func(k string) string {
			switch k {
			case "PROBE_ROLE":
				return "WriteOnly"
			case "PROBE_EXPECT_REFUSED":
				return "true"
			}
			return string(data[k])
		}
	}
	refusedLogin := regexp.MustCompile(`SASL_AUTHENTICATION_FAILED|closed the connection|EOF`)
	wrong := map[string][]byte{}
	for k, v := range g.Data {
		wrong[k] = v
	}
	wrong[kadmdriver.SecretSASLPassword] = []byte("not-the-password")
	// At once: the probe ends with the refusal itself, not with its own
	// deadline (30 s) after retrying it; how long it took is a figure.
	refused := func(what string, err error) {
		t.Helper()
		switch {
		case err == nil || !refusedLogin.MatchString(err.Error()):
			t.Errorf("%s: want a refused login, got %v", what, err)
		case errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline exceeded"):
			t.Errorf("%s: want the refusal reported at once, got it only at the probe's deadline: %v", what, err)
		}
	}
	start := time.Now()
	refused("an old password", kafka(ctx, env(wrong)))
	if err := be.Revoke(ctx, a); err != nil {
		t.Fatal(err)
	}
	refused("a revoked user", kafka(ctx, env(g.Data)))
	t.Logf("figure: both refusals surfaced in %s", time.Since(start).Round(time.Millisecond))
}

// scopedBackend opens the kadm driver on a broker that enforces SASL/SCRAM
// and ACLs, as its superuser: every access it grants gets a user of its
// own.
func scopedBackend(t *testing.T) drivers.Backend {
	t.Helper()
	b := testkafka.Start(t, testkafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true})
	cfg := &kadmdriver.Config{SeedBrokers: b.Addrs, RequestTimeout: drivers.Duration{Duration: 5 * time.Second},
		SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}}
	be, err := kadmdriver.New().Open(context.Background(), "kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return be
}

// TestKafkaAdminPrincipals: kafka-admin's user and ACL commands, which the
// e2e scenarios use as the broker's operator acting out of band, against
// a broker that enforces SCRAM and ACLs.
func TestKafkaAdminPrincipals(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	b := testkafka.Start(t, testkafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true})
	for k, v := range map[string]string{kadmdriver.SecretBootstrap: strings.Join(b.Addrs, ","), kadmdriver.SecretSecurityProtocol: "SASL_PLAINTEXT",
		kadmdriver.SecretSASLMechanism: "SCRAM-SHA-512", kadmdriver.SecretSASLUsername: "buckety", kadmdriver.SecretSASLPassword: "s3cr3t"} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		out, err := captureStdout(t, func() error { return kafkaAdmin(ctx, args) })
		if err != nil {
			t.Fatalf("kafka-admin %v: %v", args, err)
		}
		return out
	}
	run("user-add", "someone", "pw-of-someone")
	if got := run("users"); !strings.Contains(got, "someone\n") {
		t.Errorf("users: want someone listed, got %q", got)
	}
	run("acl-add", "someone", "ledger", "Write")
	if got, want := run("acls", "someone"), "TOPIC ledger LITERAL WRITE ALLOW\n"; got != want {
		t.Errorf("acls after acl-add: want %q, got %q", want, got)
	}
	run("acl-delete", "someone", "ledger", "Write")
	if got := run("acls", "someone"); got != "" {
		t.Errorf("acls after acl-delete: want none, got %q", got)
	}
	if _, err := captureStdout(t, func() error { return kafkaAdmin(ctx, []string{"acl-delete", "someone", "ledger", "Write"}) }); err == nil {
		t.Error("acl-delete of an ACL that is not there: want an error")
	}
}

// captureStdout runs f with os.Stdout going to a pipe and returns what f
// printed.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	type read struct {
		b   []byte
		err error
	}
	out := make(chan read)
	go func() {
		b, err := io.ReadAll(r)
		out <- read{b, err}
	}()
	saved := os.Stdout
	os.Stdout = w
	ferr := f()
	os.Stdout = saved
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := <-out
	if got.err != nil {
		t.Fatal(got.err)
	}
	return string(got.b), ferr
}
