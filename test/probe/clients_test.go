package main

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/Yolean/buckety-controller/test/pki"
)

// TestSecretSourceEnv: without PROBE_SECRET_DIR the Secret is the process
// environment, keys a shell could not set (sasl.username) included.
func TestSecretSourceEnv(t *testing.T) {
	t.Setenv("sasl.username", "bky.team.w_")
	t.Setenv("PROBE_SECRET_DIR", "")
	src, err := secretSource(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if got := src("sasl.username"); got != "bky.team.w_" {
		t.Errorf("want sasl.username from the environment, got %q", got)
	}
}

// TestSecretSourceDir: with PROBE_SECRET_DIR the Secret's keys are the
// files of a volume laid out as the kubelet writes it (a timestamped
// directory, ..data linking to it, a link per key), values as they are;
// PROBE_* settings still come from the environment, and no key falls back
// to it.
func TestSecretSourceDir(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "..2026_01_02_03_04_05.123")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"sasl.username": "bky.team.w_", "ssl.ca.pem": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n", "topic": "orders"}
	for k, v := range files {
		if err := os.WriteFile(filepath.Join(ts, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for k := range files {
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"PROBE_SECRET_DIR": dir, "PROBE_ROLE": "ReadOnly", "bootstrap": "from-env:9092", "topic": "from-env"}
	src, err := secretSource(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"sasl.username": "bky.team.w_",
		"ssl.ca.pem":    files["ssl.ca.pem"],
		"topic":         "orders",
		"PROBE_ROLE":    "ReadOnly",
		"bootstrap":     "", // in the environment, not in the volume
		"..data":        "",
		"../topic":      "",
		"missing":       "",
	} {
		if got := src(k); got != want {
			t.Errorf("key %s: want %q, got %q", k, want, got)
		}
	}
	for _, bad := range []string{filepath.Join(dir, "topic"), filepath.Join(dir, "no-such-dir")} {
		if _, err := secretSource(func(k string) string { return map[string]string{"PROBE_SECRET_DIR": bad}[k] }); err == nil {
			t.Errorf("PROBE_SECRET_DIR %s: want an error, got none", bad)
		}
	}
}

func TestSaramaConfig(t *testing.T) {
	ca, err := pki.NewCA("kafka-ca")
	if err != nil {
		t.Fatal(err)
	}
	caPEM := string(ca.CertPEM)
	type want struct {
		tls, rootCAs bool
		mechanism    sarama.SASLMechanism
		scram        bool
		user, pass   string
		brokers      []string
		err          string
	}
	cases := []struct {
		name string
		env  map[string]string
		want want
	}{
		{name: "plaintext", env: map[string]string{"bootstrap": "a:9092,b:9092"}, want: want{brokers: []string{"a:9092", "b:9092"}}},
		{name: "SSL with ssl.ca.pem", env: map[string]string{"bootstrap": "a:9093", "security.protocol": "SSL", "ssl.ca.pem": caPEM}, want: want{tls: true, rootCAs: true, brokers: []string{"a:9093"}}},
		{name: "SSL with the system CAs", env: map[string]string{"bootstrap": "a:9093", "security.protocol": "SSL"}, want: want{tls: true, brokers: []string{"a:9093"}}},
		{name: "SASL PLAIN", env: map[string]string{"bootstrap": "a:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"},
			want: want{mechanism: sarama.SASLTypePlaintext, user: "u", pass: "p", brokers: []string{"a:9092"}}},
		{name: "SASL SCRAM-SHA-256", env: map[string]string{"bootstrap": "a:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u", "sasl.password": "p"},
			want: want{mechanism: sarama.SASLTypeSCRAMSHA256, scram: true, user: "u", pass: "p", brokers: []string{"a:9092"}}},
		{name: "SASL_SSL SCRAM-SHA-512", env: map[string]string{"bootstrap": "a:9093", "security.protocol": "SASL_SSL", "ssl.ca.pem": caPEM, "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "sasl.password": "p"},
			want: want{tls: true, rootCAs: true, mechanism: sarama.SASLTypeSCRAMSHA512, scram: true, user: "u", pass: "p", brokers: []string{"a:9093"}}},
		{name: "no bootstrap", env: map[string]string{"topic": "t"}, want: want{err: "bootstrap"}},
		{name: "unknown protocol", env: map[string]string{"bootstrap": "a:9092", "security.protocol": "SASL"}, want: want{err: `security.protocol "SASL"`}},
		{name: "unknown mechanism", env: map[string]string{"bootstrap": "a:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI", "sasl.username": "u", "sasl.password": "p"}, want: want{err: `sasl.mechanism "GSSAPI"`}},
		{name: "SASL without a password", env: map[string]string{"bootstrap": "a:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "u"}, want: want{err: "sasl.password"}},
		{name: "a CA that is not PEM", env: map[string]string{"bootstrap": "a:9093", "security.protocol": "SSL", "ssl.ca.pem": "not a certificate"}, want: want{err: "ssl.ca.pem"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, brokers, err := saramaConfig(func(k string) string { return c.env[k] })
			if c.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.want.err) {
					t.Fatalf("want an error containing %q, got %v", c.want.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(brokers, c.want.brokers) {
				t.Errorf("brokers: want %v, got %v", c.want.brokers, brokers)
			}
			if cfg.Net.TLS.Enable != c.want.tls {
				t.Errorf("Net.TLS.Enable: want %t, got %t", c.want.tls, cfg.Net.TLS.Enable)
			}
			if c.want.tls && (cfg.Net.TLS.Config == nil || (cfg.Net.TLS.Config.RootCAs != nil) != c.want.rootCAs) {
				t.Errorf("Net.TLS.Config: want RootCAs set %t, got %+v", c.want.rootCAs, cfg.Net.TLS.Config)
			}
			sasl := cfg.Net.SASL
			if sasl.Enable != (c.want.mechanism != "") {
				t.Fatalf("Net.SASL.Enable: want %t, got %t", c.want.mechanism != "", sasl.Enable)
			}
			if c.want.mechanism == "" {
				return
			}
			if sasl.Mechanism != c.want.mechanism || sasl.User != c.want.user || sasl.Password != c.want.pass {
				t.Errorf("SASL: want %s %s/%s, got %s %s/%s", c.want.mechanism, c.want.user, c.want.pass, sasl.Mechanism, sasl.User, sasl.Password)
			}
			if !sasl.Handshake || sasl.Version != sarama.SASLHandshakeV1 {
				t.Errorf("SASL handshake: want enabled, v1 (brokers since Kafka 1.0; kfake answers only v1), got %t v%d", sasl.Handshake, sasl.Version)
			}
			if (sasl.SCRAMClientGeneratorFunc != nil) != c.want.scram {
				t.Errorf("SCRAMClientGeneratorFunc: want set %t, got %t", c.want.scram, sasl.SCRAMClientGeneratorFunc != nil)
			}
		})
	}
}

// TestSaramaSCRAM runs the SCRAM client sarama gets from the Secret
// against a SCRAM server (RFC 5802, as a broker checks it): the right
// hash per mechanism, the proof of the password, the server's signature.
func TestSaramaSCRAM(t *testing.T) {
	for _, c := range []struct {
		name, mechanism string
		server          func() hash.Hash
		serverPass      string
		tamperSignature bool
		err             string
	}{
		{name: "SCRAM-SHA-256", mechanism: "SCRAM-SHA-256", server: sha256.New, serverPass: "pw"},
		{name: "SCRAM-SHA-512", mechanism: "SCRAM-SHA-512", server: sha512.New, serverPass: "pw"},
		{name: "SCRAM-SHA-512 against a SHA-256 server", mechanism: "SCRAM-SHA-512", server: sha256.New, serverPass: "pw", err: "wrong proof"},
		{name: "wrong password", mechanism: "SCRAM-SHA-256", server: sha256.New, serverPass: "other", err: "wrong proof"},
		{name: "server signature not the server's", mechanism: "SCRAM-SHA-256", server: sha256.New, serverPass: "pw", tamperSignature: true, err: "client"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, _, err := saramaConfig(func(k string) string {
				return map[string]string{"bootstrap": "a:9092", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": c.mechanism, "sasl.username": "u=1,x", "sasl.password": "pw"}[k]
			})
			if err != nil {
				t.Fatal(err)
			}
			err = scramExchange(cfg.Net.SASL.SCRAMClientGeneratorFunc(), cfg.Net.SASL.User, cfg.Net.SASL.Password, c.server, c.serverPass, c.tamperSignature)
			if c.err == "" && err != nil {
				t.Fatalf("want the exchange to succeed, got %v", err)
			}
			if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("want an error containing %q, got %v", c.err, err)
			}
		})
	}
}

// scramExchange plays a SCRAM server whose user has password serverPass,
// hashed with h, against client (which sarama drives the same way).
func scramExchange(client sarama.SCRAMClient, user, pass string, h func() hash.Hash, serverPass string, tamper bool) error {
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	sum := func(b []byte) []byte { d := h(); d.Write(b); return d.Sum(nil) }
	if err := client.Begin(user, pass, ""); err != nil {
		return err
	}
	first, err := client.Step("")
	if err != nil {
		return err
	}
	bare, ok := strings.CutPrefix(first, "n,,")
	if !ok {
		return fmt.Errorf("client-first %q: want the gs2 header n,,", first)
	}
	var name, nonce string
	for _, f := range strings.Split(bare, ",") {
		switch {
		case strings.HasPrefix(f, "n="):
			name = strings.NewReplacer("=2C", ",", "=3D", "=").Replace(f[2:])
		case strings.HasPrefix(f, "r="):
			nonce = f[2:]
		}
	}
	if name != user || nonce == "" {
		return fmt.Errorf("client-first %q: want user %q and a nonce", first, user)
	}
	salt, iters := []byte("buckety-salt"), 4096
	serverFirst := fmt.Sprintf("r=%sSRV,s=%s,i=%d", nonce, base64.StdEncoding.EncodeToString(salt), iters)
	final, err := client.Step(serverFirst)
	if err != nil {
		return err
	}
	if client.Done() {
		return errors.New("client done before the server's signature")
	}
	withoutProof, proof64, ok := strings.Cut(final, ",p=")
	if !ok || !strings.HasPrefix(withoutProof, "c=biws,r="+nonce+"SRV") {
		return fmt.Errorf("client-final %q: want c=biws, the combined nonce and a proof", final)
	}
	salted, err := pbkdf2.Key(h, serverPass, salt, iters, h().Size())
	if err != nil {
		return err
	}
	authMessage := bare + "," + serverFirst + "," + withoutProof
	storedKey := sum(mac(salted, "Client Key"))
	proof, err := base64.StdEncoding.DecodeString(proof64)
	if err != nil || len(proof) != len(storedKey) {
		return fmt.Errorf("wrong proof %q", proof64)
	}
	clientKey := mac(storedKey, authMessage)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	if !hmac.Equal(sum(clientKey), storedKey) {
		return errors.New("wrong proof: not the password's")
	}
	sig := mac(mac(salted, "Server Key"), authMessage)
	if tamper {
		sig[0] ^= 1
	}
	if _, err := client.Step("v=" + base64.StdEncoding.EncodeToString(sig)); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if !client.Done() {
		return errors.New("client not done after the server's signature")
	}
	return nil
}

// fakeBroker is a kafkaClient on a broker that allows what a role's ACLs
// allow (acl), recording each call.
type fakeBroker struct {
	calls []string
	acl   func(op, topic, group string) bool
}

var errFakeRefused = errors.New("AUTHORIZATION_FAILED")

func (f *fakeBroker) do(call, op, topic, group string) error {
	f.calls = append(f.calls, call)
	if !f.acl(op, topic, group) {
		return errFakeRefused
	}
	return nil
}

func (f *fakeBroker) produce(_ context.Context, topic, _ string, refusal bool) error {
	return f.do(fmt.Sprintf("produce %s refusal=%t", topic, refusal), "write", topic, "")
}

func (f *fakeBroker) consume(_ context.Context, r read) error {
	call := fmt.Sprintf("consume %s group=%s any=%t commit=%t refusal=%t", r.topic, strings.Split(r.group, "clients-outside-prefix-")[0], r.value == "", r.commit, r.refusal)
	if r.readCommitted {
		call = "readCommitted " + r.topic
	}
	return f.do(call, "read", r.topic, r.group)
}

func (f *fakeBroker) transact(_ context.Context, topic, txID, _ string) error {
	return f.do("transact "+topic+" "+txID, "tx", topic, txID)
}

func (*fakeBroker) refused(err error) error {
	if errors.Is(err, errFakeRefused) {
		return nil
	}
	return fmt.Errorf("want an authorization refusal, got %v", err)
}

// roleACL is what buckety's ACLs let role do on topic with prefix (no
// prefix: shared credentials, which may do anything).
func roleACL(role, topic, prefix string) func(op, t, group string) bool {
	return func(op, t, group string) bool {
		if prefix == "" {
			return true
		}
		if t != topic || group != "" && !strings.HasPrefix(group, prefix) {
			return false
		}
		switch op {
		case "read":
			return role != "WriteOnly"
		case "write":
			return role != "ReadOnly"
		}
		return role != "ReadOnly" // transactional ids
	}
}

// TestKafkaClientChecks: the checks each role makes, on a broker allowing
// what buckety's ACLs allow; and that a broker allowing more fails them.
func TestKafkaClientChecks(t *testing.T) {
	const p = "bky.team.app.0a1b2c3d_"
	cases := []struct {
		name, role, prefix, neighbour string
		want                          []string
	}{
		{name: "ReadWrite, own user", role: "ReadWrite", prefix: p, neighbour: "theirs", want: []string{
			"produce orders refusal=false", "consume orders group=" + p + "clients-fake any=false commit=true refusal=false",
			"transact orders " + p + "tx-fake", "readCommitted orders",
			"consume orders group= any=true commit=false refusal=true", // the group outside the prefix
			"produce theirs refusal=true", "consume theirs group= any=true commit=false refusal=true"}},
		{name: "ReadWrite, shared credentials", role: "ReadWrite", neighbour: "theirs", want: []string{
			"produce orders refusal=false", "consume orders group=clients-fake-orders-readwrite any=false commit=true refusal=false"}},
		{name: "ReadOnly, own user", role: "ReadOnly", prefix: p, want: []string{
			"consume orders group=" + p + "clients-fake any=true commit=false refusal=false", "produce orders refusal=true",
			"consume orders group= any=true commit=false refusal=true"}},
		{name: "ReadOnly, shared credentials", role: "ReadOnly", want: []string{
			"consume orders group=clients-fake-orders-readonly any=true commit=false refusal=false"}},
		{name: "WriteOnly, own user", role: "WriteOnly", prefix: p, neighbour: "theirs", want: []string{
			"produce orders refusal=false", "transact orders " + p + "tx-fake", "consume orders group= any=true commit=false refusal=true",
			"produce theirs refusal=true"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{"bootstrap": "k:9092", "topic": "orders", "group.id.prefix": c.prefix, "PROBE_ROLE": c.role, "PROBE_NEIGHBOUR_TOPIC": c.neighbour}
			f := &fakeBroker{acl: roleACL(c.role, "orders", c.prefix)}
			var out []string
			summary, err := kafkaClientChecks(context.Background(), "fake", f, func(k string) string { return env[k] }, func(s string) { out = append(out, s) })
			if err != nil {
				t.Fatalf("want the checks to pass, got %v", err)
			}
			if !slices.Equal(f.calls, c.want) {
				t.Errorf("calls:\nwant %q\ngot  %q", c.want, f.calls)
			}
			checks := len(c.want)
			if c.neighbour != "" && c.prefix == "" {
				checks++ // the line saying the neighbour is not checked
			}
			if len(out) != checks || !strings.HasPrefix(summary, c.role+" (") {
				t.Errorf("want a line per check and a summary of the role, got %q and %q", out, summary)
			}
		})
	}
	t.Run("a broker allowing more than the role fails them", func(t *testing.T) {
		for _, role := range []string{"ReadWrite", "ReadOnly", "WriteOnly"} {
			env := map[string]string{"bootstrap": "k:9092", "topic": "orders", "group.id.prefix": p, "PROBE_ROLE": role}
			f := &fakeBroker{acl: func(string, string, string) bool { return true }}
			_, err := kafkaClientChecks(context.Background(), "fake", f, func(k string) string { return env[k] }, func(string) {})
			if err == nil || !strings.Contains(err.Error(), "refused") {
				t.Errorf("%s: want a failed refusal, got %v", role, err)
			}
		}
	})
	t.Run("PROBE_TOPIC_KEY names the key of the topic", func(t *testing.T) {
		// An access naming several Bucketies: no topic key, one per Buckety.
		env := map[string]string{"bootstrap": "k:9092", "topics": "orders,payments", "topic.orders": "orders", "topic.payments": "payments", "PROBE_TOPIC_KEY": "topic.payments"}
		f := &fakeBroker{acl: roleACL("ReadWrite", "payments", "")}
		summary, err := kafkaClientChecks(context.Background(), "fake", f, func(k string) string { return env[k] }, func(string) {})
		if err != nil || !strings.Contains(summary, "on topic payments") || len(f.calls) == 0 || f.calls[0] != "produce payments refusal=false" {
			t.Errorf("want the checks on topic payments, got %q, %q, %v", summary, f.calls, err)
		}
		env["PROBE_TOPIC_KEY"] = "topic.shipments"
		if _, err := kafkaClientChecks(context.Background(), "fake", &fakeBroker{}, func(k string) string { return env[k] }, func(string) {}); err == nil || !strings.Contains(err.Error(), "topic.shipments") {
			t.Errorf("want the missing key topic.shipments named, got %v", err)
		}
	})
	t.Run("an unknown role", func(t *testing.T) {
		env := map[string]string{"bootstrap": "k:9092", "topic": "orders", "PROBE_ROLE": "Admin"}
		if _, err := kafkaClientChecks(context.Background(), "fake", &fakeBroker{}, func(k string) string { return env[k] }, func(string) {}); err == nil || !strings.Contains(err.Error(), `PROBE_ROLE "Admin"`) {
			t.Errorf("want PROBE_ROLE refused, got %v", err)
		}
	})
}

func TestWithin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	block := make(chan struct{})
	defer close(block)
	if err := within(ctx, "op", func() error { <-block; return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("want the deadline, got %v", err)
	}
	if err := within(context.Background(), "op", func() error { return errFakeRefused }); !errors.Is(err, errFakeRefused) {
		t.Errorf("want f's error, got %v", err)
	}
}

// TestWatchdog: a library's checks are cancelled, with errNoProgress as
// the cause, only when no check finished for the bound; each finished
// check starts the bound again, and stopping it is no timeout.
func TestWatchdog(t *testing.T) {
	ctx, step, stop := watchdog(context.Background(), 50*time.Millisecond)
	defer stop()
	select {
	case <-ctx.Done():
		if cause := context.Cause(ctx); !errors.Is(cause, errNoProgress) || !strings.Contains(cause.Error(), "within 50ms") {
			t.Errorf("want errNoProgress naming the bound as the cause, got %v", cause)
		}
	case <-time.After(time.Minute):
		t.Fatal("a watchdog with no step was not cancelled")
	}
	step() // after the cancel: no effect, no panic
	if !errors.Is(context.Cause(ctx), errNoProgress) {
		t.Errorf("a step after the cancel changed the cause to %v", context.Cause(ctx))
	}

	// Steps keep a watchdog alive past its bound: each check here is 10 ms
	// against a bound of 2 s (a margin no loaded machine's scheduling
	// eats), the whole run 3 s.
	ctx, step, stop = watchdog(context.Background(), 2*time.Second)
	for start := time.Now(); time.Since(start) < 3*time.Second; {
		time.Sleep(10 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatalf("cancelled %s in, with a step every 10 ms: %v", time.Since(start).Round(time.Millisecond), context.Cause(ctx))
		}
		step()
	}
	stop()
	if errors.Is(context.Cause(ctx), errNoProgress) || ctx.Err() == nil {
		t.Errorf("stop: want a plain cancel, got %v", context.Cause(ctx))
	}
}
