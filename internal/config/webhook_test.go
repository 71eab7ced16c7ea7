package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/naming"
)

// loadForWebhook loads body the way buckety-webhook does: no environment
// (a lookup fails the test), no credentials, none of the controller's files.
func loadForWebhook(t *testing.T, body string) (*config.Config, error) {
	t.Helper()
	noEnv := func(k string) (string, bool) {
		t.Errorf("the webhook looked up environment variable %s; it has no environment", k)
		return "", false
	}
	return config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), WithoutCredentials: true, Lookup: noEnv})
}

// TestWebhookLoadsWithoutEnvironment: every config the controller accepts,
// with any variable, loads in the webhook with an empty environment and no
// mounted files (issue 14.1: such configs crash-looped the webhook).
func TestWebhookLoadsWithoutEnvironment(t *testing.T) {
	cases := []struct{ name, body string }{
		{"kadm: seed brokers, bootstrap and SASL user from the environment", `
backends:
- name: kafka
  driver: kadm
  config:
    seedBrokers: ["${KAFKA_BOOTSTRAP}", "b2:9092"]
    bootstrap: ${KAFKA_PUBLIC_BOOTSTRAP}
    sasl: {mechanism: SCRAM-SHA-512, username: "${KAFKA_USER}", password: "${KAFKA_PASSWORD}"}
`},
		{"kadm: a default that only the environment makes valid", `
backends:
- name: kafka
  driver: kadm
  config:
    seedBrokers: ["${KAFKA_BOOTSTRAP:-not a host port}"]
`},
		{"kadm: TLS from files the webhook does not mount", `
backends:
- name: kafka
  driver: kadm
  config:
    seedBrokers: [k:9093]
    tls: {caFile: /etc/kafka/ca.pem, certFile: client.crt, keyFile: client.key, serverName: kafka.internal}
`},
		{"kadm: TLS from PEM in the environment", `
backends:
- name: kafka
  driver: kadm
  config:
    seedBrokers: [k:9093]
    tls: {ca: "${KAFKA_CA_PEM}", cert: "${KAFKA_CERT_PEM}", key: "${KAFKA_KEY_PEM}"}
`},
		{"s3: endpoints and CA from the environment", `
backends:
- name: s3
  driver: s3
  config:
    implementation: minio
    endpoint: ${S3_ENDPOINT}
    consumerEndpoint: ${S3_PUBLIC_ENDPOINT}
    ca: ${S3_CA_PEM}
    accessKeyID: ${S3_ACCESS_KEY_ID}
    secretAccessKey: ${S3_SECRET_ACCESS_KEY}
`},
		{"s3: a CA file the webhook does not mount", `
backends:
- name: s3
  driver: s3
  config: {endpoint: "https://s3.internal", caFile: s3-ca.pem, accessKeyID: "${A}", secretAccessKey: "${B}"}
`},
		{"a name policy from the environment", `
backends:
- name: kafka
  driver: kadm
  config: {seedBrokers: [k:9092]}
  namePolicy: {prefix: "${TENANT_PREFIX}$${namespace}."}
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadForWebhook(t, c.body)
			if err != nil {
				t.Fatalf("want the webhook to load it, got %v", err)
			}
			for _, b := range cfg.Backends {
				switch o := b.Options().(type) {
				case *kadm.Config:
					if o.SASL != nil && o.SASL.Password != "" {
						t.Errorf("want the SASL password cleared, got %q", o.SASL.Password)
					}
				case *s3.Config:
					if o.AccessKeyID != "" || o.SecretAccessKey != "" {
						t.Errorf("want the S3 keys cleared, got %q %q", o.AccessKeyID, o.SecretAccessKey)
					}
				}
			}
		})
	}
}

// TestWebhookStillValidates: without the environment, everything that does
// not depend on it is still checked.
func TestWebhookStillValidates(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"unknown driver", "backends:\n- {name: a, driver: kafka}\n", `backends[0].driver: Invalid value: "kafka": unknown driver`},
		{"bad backend name", "backends:\n- {name: Kafka_A, driver: kadm, config: {seedBrokers: ['${B}']}}\n", `backends[0].name: Invalid value: "Kafka_A"`},
		{"duplicate backend", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1]}}\n- {name: a, driver: kadm, config: {seedBrokers: [k:1]}}\n", "backends[1].name: Duplicate value"},
		{"bad defaults key", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1]}, defaults: {my.zone: z}}\n", "backends[0].defaults[my.zone]"},
		{"bad implementation", "backends:\n- {name: a, driver: s3, config: {implementation: ceph, endpoint: '${E}', accessKeyID: '${A}', secretAccessKey: '${B}'}}\n", `backends[0].config.implementation: Unsupported value: "ceph"`},
		{"literal seed broker", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: ['${B}', nohost]}}\n", "backends[0].config.seedBrokers[1]: Invalid value"},
		{"literal endpoint", "backends:\n- {name: a, driver: s3, config: {endpoint: 'ftp://x', accessKeyID: '${A}', secretAccessKey: '${B}'}}\n", "backends[0].config.endpoint: Invalid value"},
		{"missing endpoint", "backends:\n- {name: a, driver: s3, config: {accessKeyID: '${A}', secretAccessKey: '${B}'}}\n", "backends[0].config.endpoint: Required value"},
		{"SASL mechanism", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1], sasl: {mechanism: GSSAPI, username: '${U}', password: '${P}'}}}\n", `backends[0].config.sasl.mechanism: Unsupported value: "GSSAPI"`},
		{"shareCredentials without sasl", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1], shareCredentials: true}}\n", "backends[0].config.shareCredentials: Invalid value: true: there are no credentials to share without sasl"},
		{"unknown option", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1], seeds: [x]}}\n", `backends[0].config.seeds: Invalid value: unknown field "seeds"`},
		{"${ in an untagged field", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1], clientID: '${ID}'}}\n", "backends[0].config.clientID: Invalid value: contains ${...}"},
		{"malformed reference", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: ['${B']}}\n", "backends[0].config.seedBrokers[0]: Invalid value: unterminated ${"},
		{"bad name policy", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1]}, namePolicy: {prefix: '$${namespace}-'}}\n", "backends[0].namePolicy.prefix"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadForWebhook(t, c.body)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("want an error containing %q, got %v", c.want, err)
			}
		})
	}
}

// TestWebhookSkipsUnresolvedNamePolicy: a prefix the webhook cannot resolve
// is left to the controller rather than refusing every name.
func TestWebhookSkipsUnresolvedNamePolicy(t *testing.T) {
	cfg, err := loadForWebhook(t, "backends:\n- {name: a, driver: kadm, config: {seedBrokers: [k:1]}, namePolicy: {prefix: '${ZONE}-$${namespace}.'}}\n")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cfg.Backend("a")
	if err := b.CheckName(naming.Source{Name: "orders", Namespace: "team"}, "anything"); err != nil {
		t.Errorf("want the unresolved policy skipped in the webhook, got %v", err)
	}
}

// placeholder is what the e2e overlays' prepare.sh fills in (@ENDPOINT@).
var placeholder = regexp.MustCompile(`@[A-Z_]+@`)

// TestExampleConfigsLoadInWebhook: every buckety-controller.yaml in the
// repository (examples, e2e overlays) and every config example in the docs
// (README.md, docs/*.md, drivers/*/README.md) loads in the webhook with no
// environment and no files.
func TestExampleConfigsLoadInWebhook(t *testing.T) {
	root := filepath.Join("..", "..")
	configs := map[string]string{}
	for _, pattern := range []string{"examples/*/buckety-controller.yaml", "test/e2e/overlays/*/buckety-controller.yaml"} {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			configs[f] = placeholder.ReplaceAllStringFunc(string(b), func(p string) string {
				switch p {
				case "@KAFKA_BOOTSTRAP@":
					return "127.0.0.1:9092"
				case "@OUTAGE_KAFKA_BOOTSTRAP@":
					return "127.0.0.1:9093"
				case "@ENDPOINT@":
					return "http://127.0.0.1:7070"
				case "@OUTAGE_ENDPOINT@":
					return "http://127.0.0.1:7072"
				case "@ADMIN_ENDPOINT@":
					return "http://127.0.0.1:7071"
				case "@OUTAGE_ADMIN_ENDPOINT@":
					return "http://127.0.0.1:7073"
				case "@REGION@":
					return "us-east-1"
				}
				t.Fatalf("%s: unknown placeholder %s", f, p)
				return ""
			})
		}
	}
	docs := []string{filepath.Join(root, "README.md")}
	for _, pattern := range []string{"docs/*.md", "drivers/*/README.md"} {
		files, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, files...)
	}
	n := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for i, block := range strings.Split(string(b), "```yaml\n")[1:] {
			block, _, _ = strings.Cut(block, "```")
			if strings.HasPrefix(block, "backends:") {
				configs[fmt.Sprintf("%s yaml block %d", rel, i)] = block
				n++
			}
		}
	}
	if n < 3 || len(configs) < 7 {
		t.Fatalf("want the docs' config examples (found %d: README and each driver's page) and the example files (%d in all)", n, len(configs))
	}
	for name, body := range configs {
		t.Run(name, func(t *testing.T) {
			if _, err := loadForWebhook(t, body); err != nil {
				t.Errorf("want the webhook to load it with no environment, got %v", err)
			}
		})
	}
}
