package kafka_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/pki"
)

// clientsDirEnv names the directory of the real clients' wrappers (kcat,
// python3 with confluent-kafka, ...), which make test-integration sets
// from test/tools/install.sh clients.
const clientsDirEnv = "BUCKETY_CLIENTS"

// clients returns the directory of the real clients.
func clients(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(clientsDirEnv)
	if dir == "" {
		if testing.Short() {
			t.Skip("integration test: needs the real clients; BUCKETY_CLIENTS unset (make test-integration sets it)")
		}
		t.Fatal("BUCKETY_CLIENTS is unset: run through make test-integration, or set it to $(test/tools/install.sh clients)")
	}
	for _, c := range []string{"kcat", "python3", "node"} {
		if _, err := os.Stat(filepath.Join(dir, c)); err != nil {
			t.Fatalf("%s=%s: %v (re-run test/tools/install.sh clients)", clientsDirEnv, dir, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "VERSIONS")); err == nil {
		// The clients, without the dependency closure that follows them.
		pins, _, _ := strings.Cut(string(b), "\n# Every unpacked")
		t.Logf("clients (%s/VERSIONS):\n%s", dir, pins)
	}
	return dir
}

// TestLibrdkafkaClients logs in to the test broker with librdkafka's own
// clients, kcat and confluent-kafka for Python, as a SCRAM-SHA-512 user with
// ACLs (what buckety issues for an access), over plaintext and over TLS: each
// produces a record, each reads both, and a wrong password is refused. It
// guards the broker's ApiVersions patch (broker/handshake.go): without
// SaslHandshake v0 advertised, librdkafka refuses to log in at all.
func TestLibrdkafkaClients(t *testing.T) {
	bin := clients(t)
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"SASL_PLAINTEXT", false}, {"SASL_SSL", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newClientsEnv(t, bin, tc.tls)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			fromKcat, fromPython := "from-kcat-"+tc.name, "from-python-"+tc.name

			// kcat -P exits once its record is acknowledged (or fails).
			if out, stderr, err := e.kcat(ctx, fromKcat+"\n", "-P", "-t", e.topic); err != nil {
				t.Fatalf("kcat -P as %s: %v\n%s%s", e.user, err, out, stderr)
			}
			if out, stderr, err := e.python(ctx, "produce", e.topic, fromPython); err != nil {
				t.Fatalf("confluent-kafka produce as %s: %v\n%s%s", e.user, err, out, stderr)
			}
			out, stderr, err := e.python(ctx, "consume", e.topic, e.group, fromKcat, fromPython)
			if err != nil {
				t.Fatalf("confluent-kafka consume as %s in group %s: want both records, got %v\n%s%s", e.user, e.group, err, out, stderr)
			}
			t.Logf("confluent-kafka: %s", out)
			// -e: exit at the end of the partition.
			out, stderr, err = e.kcat(ctx, "", "-C", "-t", e.topic, "-o", "beginning", "-e", "-q", "-f", `%s\n`)
			if err != nil {
				t.Fatalf("kcat -C as %s: %v\n%s%s", e.user, err, out, stderr)
			}
			if got := strings.Fields(out); !slices.Equal(got, []string{fromKcat, fromPython}) {
				t.Errorf("kcat -C: want records [%s %s], got %q", fromKcat, fromPython, out)
			}

			// A wrong password is refused, by both. kfake closes the
			// connection where Kafka first answers SASL_AUTHENTICATION_FAILED;
			// librdkafka logs either as a SASL authentication error
			// (docs/development.md).
			e.password = "wrong-" + e.password
			out, stderr, err = e.kcat(ctx, "", "-L", "-m", "3")
			if err == nil {
				t.Errorf("kcat -L with a wrong password: want a refusal, got metadata:\n%s", out)
			} else if !strings.Contains(stderr, "SASL authentication error") {
				t.Errorf("kcat -L with a wrong password: want a SASL authentication error, got %v:\n%s%s", err, out, stderr)
			}
			out, stderr, err = e.python(ctx, "metadata")
			var res struct{ Exception string }
			if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
				t.Fatalf("confluent-kafka metadata with a wrong password: %v (%v)\n%s%s", err, jerr, out, stderr)
			}
			if err == nil || res.Exception == "" {
				t.Errorf("confluent-kafka metadata with a wrong password: want list_topics refused, got %v: %s", err, out)
			} else if !strings.Contains(stderr, "SASL authentication error") {
				t.Errorf("confluent-kafka metadata with a wrong password: want a SASL authentication error, got %v: %s%s", err, out, stderr)
			}
			t.Logf("confluent-kafka with a wrong password: %s", out)
		})
	}
}

// TestKafkajsClient runs kafkajs against the test broker, without SASL and
// with SCRAM: it produces and consumes in a group. With SCRAM it logs in
// only because the broker is built with kfake's SaslHandshake answer
// listing the enabled mechanisms, as Kafka's does (test/kafka/build.go):
// kafkajs checks that list, and kfake alone sends none.
func TestKafkajsClient(t *testing.T) {
	bin := clients(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Run("PLAINTEXT", func(t *testing.T) {
		b := kafka.Start(t, kafka.Options{})
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
			t.Fatal(err)
		}
		out, stderr, err := kafkajs(ctx, bin, map[string]any{"brokers": b.Addrs}, "orders", "orders-reader", "from-kafkajs")
		if err != nil {
			t.Fatalf("kafkajs round trip: %v\n%s%s", err, out, stderr)
		}
		t.Logf("kafkajs: %s", out)
	})
	t.Run("SASL_PLAINTEXT", func(t *testing.T) {
		e := newClientsEnv(t, bin, false)
		sasl := map[string]string{"mechanism": "scram-sha-512", "username": e.user, "password": e.password}
		out, stderr, err := kafkajs(ctx, bin, map[string]any{"brokers": strings.Split(e.bootstrap, ","), "sasl": sasl}, e.topic, e.group, "from-kafkajs")
		if err != nil {
			t.Fatalf("kafkajs with SCRAM-SHA-512: %v\n%s%s", err, out, stderr)
		}
		t.Logf("kafkajs with SCRAM-SHA-512: %s", out)
		sasl["password"] = "wrong"
		if out, stderr, err := kafkajs(ctx, bin, map[string]any{"brokers": strings.Split(e.bootstrap, ","), "sasl": sasl}, e.topic, e.group, "x"); err == nil {
			t.Fatalf("kafkajs with a wrong password: want it refused, got %s%s", out, stderr)
		}
	})
}

// kafkajs runs testdata/kafkajs_client.js.
func kafkajs(ctx context.Context, bin string, conf map[string]any, topic, group, value string) (stdout, stderr string, err error) {
	c, err := json.Marshal(conf)
	if err != nil {
		return "", "", err
	}
	return run(ctx, "", filepath.Join(bin, "node"), filepath.Join("testdata", "kafkajs_client.js"), string(c), topic, group, value)
}

// clientsEnv is a broker with a topic, a group and a SCRAM user allowed to
// use both, and how the real clients reach it.
type clientsEnv struct {
	bin       string
	bootstrap string
	// librdkafka is the clients' configuration but for the password.
	librdkafka     map[string]string
	user, password string
	topic, group   string
}

func newClientsEnv(t *testing.T, bin string, withTLS bool) *clientsEnv {
	t.Helper()
	opts := kafka.Options{SASL: []string{"SCRAM-SHA-512:admin:secret"}, ACLs: true}
	e := &clientsEnv{
		bin: bin, user: "app", password: "app-secret", topic: "orders", group: "orders-reader",
		librdkafka: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512"},
	}
	var dialTLS []kgo.Opt
	if withTLS {
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
		opts.TLSCert, opts.TLSKey = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		e.librdkafka["security.protocol"] = "SASL_SSL"
		e.librdkafka["ssl.ca.location"] = filepath.Join(dir, "ca.pem")
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		dialTLS = []kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})}
	}
	b := kafka.Start(t, opts)
	e.bootstrap = b.Bootstrap()

	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs...),
		kgo.SASL(scram.Auth{User: "admin", Pass: "secret"}.AsSha512Mechanism())}, dialTLS...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, e.topic); err != nil {
		t.Fatalf("create topic %s: %v", e.topic, err)
	}
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: e.user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: e.password}})
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		t.Fatalf("create SCRAM user %s: %v", e.user, err)
	}
	for _, acl := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:"+e.user).Topics(e.topic).Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:" + e.user).Groups(e.group).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	} {
		results, err := adm.CreateACLs(ctx, acl)
		for _, r := range results {
			err = errors.Join(err, r.Err)
		}
		if err != nil {
			t.Fatalf("ACLs for %s: %v", e.user, err)
		}
	}
	return e
}

// config is librdkafka's configuration for the user.
func (e *clientsEnv) config() map[string]string {
	c := map[string]string{"bootstrap.servers": e.bootstrap, "sasl.username": e.user, "sasl.password": e.password}
	for k, v := range e.librdkafka {
		c[k] = v
	}
	return c
}

// kcat runs kcat as the user.
func (e *clientsEnv) kcat(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	a := []string{"-b", e.bootstrap}
	for k, v := range e.config() {
		if k != "bootstrap.servers" {
			a = append(a, "-X", k+"="+v)
		}
	}
	return run(ctx, stdin, filepath.Join(e.bin, "kcat"), append(a, args...)...)
}

// python runs testdata/confluent_kafka_client.py as the user.
func (e *clientsEnv) python(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	conf, err := json.Marshal(e.config())
	if err != nil {
		return "", "", err
	}
	return run(ctx, "", filepath.Join(e.bin, "python3"), append([]string{filepath.Join("testdata", "confluent_kafka_client.py"), string(conf)}, args...)...)
}

func run(ctx context.Context, stdin, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}
