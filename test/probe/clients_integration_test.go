package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/Yolean/buckety-controller/drivers"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	testkafka "github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/pki"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// runClients runs `probe clients KIND LIB` with env as the process
// environment and returns what it printed.
func runClients(t *testing.T, env map[string]string, kind, lib string) (string, error) {
	t.Helper()
	return captureStdout(t, func() error {
		return clients(context.Background(), []string{kind, lib}, func(k string) string { return env[k] })
	})
}

func secretEnv(data map[string][]byte, extra map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range data {
		env[k] = string(v)
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// TestClientsKafkaRoles: sarama and franz-go, configured from Secrets the
// kadm driver minted on a broker that enforces SCRAM and ACLs, do what
// each role allows, are refused the rest and the neighbour's topic; the
// ReadWrite consumer group committed its offsets.
func TestClientsKafkaRoles(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, topic := range []string{"clients", "neighbour"} {
		if _, err := be.Ensure(ctx, drivers.Resource{Name: topic}); err != nil {
			t.Fatal(err)
		}
	}
	sc := be.(drivers.CredentialIssuer)
	grant := func(role string) map[string][]byte {
		a := drivers.Access{Resource: "clients", Namespace: "team", Name: strings.ToLower(role), UID: "uid-" + role, Role: drivers.Role(role), Assert: drivers.IssueNew}
		a.Principal = sc.Principal(a, 1)
		g, err := be.Grant(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		return g.Data
	}
	secrets := map[string]map[string][]byte{"ReadWrite": grant("ReadWrite"), "WriteOnly": grant("WriteOnly"), "ReadOnly": grant("ReadOnly")}
	admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: "s3cr3t"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, lib := range []string{"sarama", "franz-go"} {
		t.Run(lib, func(t *testing.T) {
			for _, role := range []string{"ReadWrite", "WriteOnly", "ReadOnly"} { // ReadOnly last: it reads what the others wrote
				start := time.Now()
				out, err := runClients(t, secretEnv(secrets[role], map[string]string{"PROBE_ROLE": role, "PROBE_NEIGHBOUR_TOPIC": "neighbour"}), "kafka", lib)
				if err != nil {
					t.Fatalf("%s: want the checks to pass, got %v\n%s", role, err, out)
				}
				t.Logf("%s in %s:\n%s", role, time.Since(start).Round(time.Millisecond), out)
				want := map[string][]string{
					"ReadWrite": {"produce to clients ok", "consume in group ", "transaction ", "read_committed ok", "(outside the prefix) refused ok", "produce to neighbour topic neighbour refused ok", "consume neighbour topic neighbour refused ok"},
					"WriteOnly": {"produce to clients ok", "transaction ", "consume refused ok", "produce to neighbour topic neighbour refused ok"},
					"ReadOnly":  {"consume in group ", "produce refused ok", "(outside the prefix) refused ok", "consume neighbour topic neighbour refused ok"},
				}[role]
				for _, w := range want {
					if !strings.Contains(out, "clients: "+lib+" "+strings.TrimSuffix(w, " ")) && !strings.Contains(out, w) {
						t.Errorf("%s: want a line %q, got\n%s", role, w, out)
					}
				}
				if !strings.Contains(out, "probe: OK: clients kafka "+lib+": "+role) {
					t.Errorf("%s: want probe: OK, got\n%s", role, out)
				}
			}
			group := string(secrets["ReadWrite"][kadmdriver.SecretGroupPrefix]) + "clients-" + lib
			offsets, err := kadm.NewClient(admin).FetchOffsets(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := offsets.Lookup("clients", 0); !ok || o.At <= 0 {
				t.Errorf("group %s: want its offset on clients committed, got %+v (found %t)", group, o, ok)
			}
		})
	}
}

// TestClientsKafkaSecured: sarama connects with the keys of TLS and SASL
// Secrets (shared credentials), as franz-go does in TestKafkaSecuredBrokers.
func TestClientsKafkaSecured(t *testing.T) {
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
	for _, tc := range []struct {
		name   string
		broker testkafka.Options
		env    map[string]string
	}{
		{name: "SSL", broker: testkafka.Options{TLSCert: filepath.Join(dir, "tls.crt"), TLSKey: filepath.Join(dir, "tls.key")},
			env: map[string]string{"security.protocol": "SSL", "ssl.ca.pem": string(ca.CertPEM)}},
		{name: "SASL_PLAINTEXT PLAIN", broker: testkafka.Options{SASL: []string{"PLAIN:u:pw"}},
			env: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "pw"}},
		{name: "SASL_PLAINTEXT SCRAM-SHA-256", broker: testkafka.Options{SASL: []string{"SCRAM-SHA-256:u:pw"}},
			env: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u", "sasl.password": "pw"}},
		{name: "SASL_SSL SCRAM-SHA-512", broker: testkafka.Options{TLSCert: filepath.Join(dir, "tls.crt"), TLSKey: filepath.Join(dir, "tls.key"), SASL: []string{"SCRAM-SHA-512:u:pw"}},
			env: map[string]string{"security.protocol": "SASL_SSL", "ssl.ca.pem": string(ca.CertPEM), "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testkafka.Start(t, tc.broker)
			tc.env["bootstrap"], tc.env["topic"] = b.Bootstrap(), "secured"
			opts, err := kafkaOpts(func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			admin, err := kgo.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, -1, nil, "secured"); err != nil {
				t.Fatal(err)
			}
			out, err := runClients(t, tc.env, "kafka", "sarama")
			if err != nil || !strings.Contains(out, "probe: OK") {
				t.Fatalf("want sarama to connect with the Secret's keys, got %v\n%s", err, out)
			}
		})
	}
}

// TestClientsS3Roles: aws-sdk-go-v2 from the Secret's keys, and from the
// aws-env format through config.LoadDefaultConfig, with keys of their own
// on real MinIO and VersityGW: each role does what it may, is refused the
// rest and the neighbour's bucket; the Secret read from a mounted
// directory works as from the environment.
func TestClientsS3Roles(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv := s3test.Start(t, impl, s3test.Options{IAM: true})
			cfg := &s3driver.Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
				AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second},
				Credentials: &s3driver.Credentials{AdminEndpoint: srv.AdminEndpoint}}
			be, err := s3driver.New().Open(context.Background(), "s3", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			sc := be.(drivers.CredentialIssuer)
			// Until the test's own backstop: scoping is seen once the
			// server's IAM answers, which a loaded machine delays.
			deadline, _ := ctx.Deadline()
			for ; ; time.Sleep(100 * time.Millisecond) {
				s, err := sc.Issuing(ctx)
				if err == nil && s.PerAccess {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("scoping: %+v %v", s, err)
				}
			}
			for _, b := range []string{"clients", "neighbour"} {
				if _, err := be.Ensure(ctx, drivers.Resource{Name: b}); err != nil {
					t.Fatal(err)
				}
			}
			grant := func(role string, formats ...string) map[string][]byte {
				a := drivers.Access{Resource: "clients", Namespace: "team", Name: strings.ToLower(role), UID: "uid-" + role, Role: drivers.Role(role), Assert: drivers.IssueNew, SecretFormats: formats}
				a.Principal = sc.Principal(a, 1)
				g, err := be.Grant(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				return g.Data
			}
			rw := grant("ReadWrite", s3driver.FormatAWSEnv)
			for _, role := range []string{"ReadWrite", "WriteOnly", "ReadOnly"} {
				data := rw
				if role != "ReadWrite" {
					data = grant(role)
				}
				out, err := runClients(t, secretEnv(data, map[string]string{"PROBE_ROLE": role, "PROBE_NEIGHBOUR_BUCKET": "neighbour"}), "s3", "aws-sdk-go-v2")
				if err != nil || !strings.Contains(out, "probe: OK") {
					t.Fatalf("%s: want the checks to pass, got %v\n%s", role, err, out)
				}
				t.Logf("%s:\n%s", role, out)
			}
			t.Run("aws-env", func(t *testing.T) {
				for _, k := range []string{s3driver.SecretAWSAccessKeyID, s3driver.SecretAWSSecretAccessKey, s3driver.SecretAWSEndpointURLS3, s3driver.SecretAWSRegion} {
					if len(rw[k]) == 0 {
						t.Fatalf("the aws-env Secret has no %s: %v", k, keysOf(rw))
					}
					t.Setenv(k, string(rw[k]))
				}
				// Nothing else from the developer's machine.
				t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
				t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
				t.Setenv("AWS_PROFILE", "")
				out, err := runClients(t, map[string]string{"BUCKET_NAME": "clients", "PROBE_NEIGHBOUR_BUCKET": "neighbour"}, "s3", "aws-env")
				if err != nil || !strings.Contains(out, "probe: OK") {
					t.Fatalf("want the checks to pass from the AWS environment, got %v\n%s", err, out)
				}
			})
			t.Run("mounted Secret", func(t *testing.T) {
				dir := t.TempDir()
				for k, v := range rw {
					if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				out, err := runClients(t, map[string]string{"PROBE_SECRET_DIR": dir}, "s3", "aws-sdk-go-v2")
				if err != nil || !strings.Contains(out, "probe: OK") {
					t.Fatalf("want the checks to pass with the Secret as files, got %v\n%s", err, out)
				}
			})
		})
	}
}
