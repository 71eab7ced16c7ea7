package kadm

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateName(t *testing.T) {
	d := New()
	cases := []struct {
		name, err, warn string
	}{
		{name: "tenant1.orders.v003"},
		{name: "Orders-2024"},
		{name: strings.Repeat("a", 249)},
		{name: strings.Repeat("a", 250), err: "may not be more than 249 bytes"},
		{name: "", err: "the topic name is empty"},
		{name: ".", err: `"." and ".." are not valid topic names`},
		{name: "..", err: `"." and ".." are not valid topic names`},
		{name: "a b/c", err: `found " /"`},
		{name: "tenant1:orders", err: `found ":"`},
		{name: "__consumer_offsets", err: `reserved for Kafka's internal topics`},
		{name: "tenant_1.orders", warn: "mixes '.' and '_'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			warn, errs := d.ValidateName(field.NewPath("status", "backendResourceName"), nil, c.name)
			if c.err == "" && len(errs) > 0 {
				t.Fatalf("want valid, got %v", errs)
			}
			if c.err != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), c.err)) {
				t.Fatalf("want error containing %q, got %v", c.err, errs)
			}
			if got := strings.Join(warn, "; "); c.warn != "" && !strings.Contains(got, c.warn) || c.warn == "" && got != "" {
				t.Fatalf("want warning %q, got %q", c.warn, got)
			}
		})
	}
}

func TestValidateParameters(t *testing.T) {
	d := New()
	cases := []struct {
		name     string
		old, new map[string]string
		errs     []string
		warn     string
	}{
		{name: "all kinds", new: map[string]string{"partitions": "12", "replicationFactor": "3", "config.retention.ms": "604800000", "config.cleanup.policy": "delete"}},
		{name: "empty", new: nil},
		{name: "zero partitions", new: map[string]string{"partitions": "0"}, errs: []string{`spec.parameters[partitions]: Invalid value: "0": must be a positive integer`}},
		{name: "non-numeric partitions", new: map[string]string{"partitions": "twelve"}, errs: []string{`spec.parameters[partitions]: Invalid value: "twelve"`}},
		{name: "padded partitions", new: map[string]string{"partitions": "012"}, errs: []string{`spec.parameters[partitions]: Invalid value: "012"`}},
		{name: "negative rf", new: map[string]string{"replicationFactor": "-1"}, errs: []string{`spec.parameters[replicationFactor]: Invalid value: "-1"`}},
		{name: "huge rf", new: map[string]string{"replicationFactor": "40000"}, errs: []string{`spec.parameters[replicationFactor]: Invalid value: "40000": must be a positive integer up to 32767`}},
		{name: "unknown key names the allowed keys", new: map[string]string{"retentionMs": "1"}, errs: []string{`spec.parameters[retentionMs]: Unsupported value: "retentionMs": supported values: "partitions", "replicationFactor", "config.<kafka topic config>"`}},
		{name: "overlap with partitions", new: map[string]string{"config.num.partitions": "3"}, errs: []string{`spec.parameters[config.num.partitions]: Invalid value: "config.num.partitions": duplicates the driver parameter "partitions"; use partitions instead`}},
		{name: "overlap with replicationFactor", new: map[string]string{"config.replication.factor": "3"}, errs: []string{`duplicates the driver parameter "replicationFactor"`}},
		{name: "leader throttle is operational", new: map[string]string{"config.leader.replication.throttled.replicas": "*"}, errs: []string{`spec.parameters[config.leader.replication.throttled.replicas]: Invalid value: "config.leader.replication.throttled.replicas": leader.replication.throttled.replicas is an operational config that buckety never sets or removes: it is set by kafka-reassign-partitions`}},
		{name: "follower throttle is operational", new: map[string]string{"config.follower.replication.throttled.replicas": "0:1"}, errs: []string{`spec.parameters[config.follower.replication.throttled.replicas]: Invalid value: "config.follower.replication.throttled.replicas": follower.replication.throttled.replicas is an operational config`}},
		{name: "malformed config name", new: map[string]string{"config.Retention.MS": "1"}, errs: []string{`spec.parameters[config.Retention.MS]: Invalid value: "config.Retention.MS": after "config." must come a Kafka topic config name`}},
		{name: "empty config name", new: map[string]string{"config.": "1"}, errs: []string{`spec.parameters[config.]`}},
		{name: "unknown config warns", new: map[string]string{"config.redpanda.remote.read": "true"}, warn: `"redpanda.remote.read" is not an Apache Kafka topic config`},
		{name: "every bad key at once", new: map[string]string{"partitions": "x", "replicationFactor": "y", "bogus": "z"}, errs: []string{"[bogus]", "[partitions]", "[replicationFactor]"}},
		{name: "grow partitions", old: map[string]string{"partitions": "3"}, new: map[string]string{"partitions": "6"}},
		{name: "shrink partitions", old: map[string]string{"partitions": "6"}, new: map[string]string{"partitions": "3"}, errs: []string{`spec.parameters[partitions]: Forbidden: can only grow (was 6, now 3): Kafka cannot remove partitions`}},
		{name: "unset partitions", old: map[string]string{"partitions": "6"}, new: map[string]string{}},
		{name: "change rf", old: map[string]string{"replicationFactor": "3"}, new: map[string]string{"replicationFactor": "1"}, errs: []string{`spec.parameters[replicationFactor]: Forbidden: is immutable after creation (was 3, now 1)`}},
		{name: "add rf", old: map[string]string{}, new: map[string]string{"replicationFactor": "3"}, errs: []string{`is immutable after creation (was unset, now 3)`}},
		{name: "remove rf", old: map[string]string{"replicationFactor": "3"}, new: map[string]string{}, errs: []string{`is immutable after creation (was 3, now unset)`}},
		{name: "dangerous change warns", old: map[string]string{"config.cleanup.policy": "delete"}, new: map[string]string{"config.cleanup.policy": "compact"}, warn: "changing cleanup.policy changes which records the broker deletes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			warn, errs := d.ValidateParameters(field.NewPath("spec", "parameters"), nil, c.old, c.new)
			if len(errs) != len(c.errs) {
				t.Fatalf("want %d errors %q, got %d: %v", len(c.errs), c.errs, len(errs), errs)
			}
			all := errs.ToAggregate()
			for _, e := range c.errs {
				if !strings.Contains(all.Error(), e) {
					t.Errorf("want error containing %q, got %v", e, all)
				}
			}
			if got := strings.Join(warn, "; "); c.warn != "" && !strings.Contains(got, c.warn) || c.warn == "" && got != "" {
				t.Errorf("want warning %q, got %q", c.warn, got)
			}
		})
	}
}

func TestValidateAccess(t *testing.T) {
	d := New()
	p := field.NewPath("spec", "parameters")
	if w, errs := d.ValidateAccess(p, nil, "ReadWrite", nil); len(w) != 0 || len(errs) != 0 {
		t.Errorf("ReadWrite: want nothing, got %v %v", w, errs)
	}
	w, errs := d.ValidateAccess(p, nil, "ReadOnly", map[string]string{"consumerGroupPrefix": "tenant1-orders-reporting-"})
	if len(errs) != 0 || len(w) != 2 || !strings.Contains(strings.Join(w, ";"), "role ReadOnly is not enforced in v1alpha1") {
		t.Errorf("ReadOnly with prefix: want two warnings, got %v %v", w, errs)
	}
	_, errs = d.ValidateAccess(p, nil, "ReadWrite", map[string]string{"group": "x", "consumerGroupPrefix": "bad prefix"})
	if len(errs) != 2 || !strings.Contains(errs.ToAggregate().Error(), `spec.parameters[group]: Unsupported value: "group": supported values: "consumerGroupPrefix"`) {
		t.Errorf("want two errors naming the keys, got %v", errs)
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		errs []string
	}{
		{name: "minimal", cfg: Config{SeedBrokers: []string{"kafka:9092"}}},
		{name: "no brokers", cfg: Config{}, errs: []string{"config.seedBrokers: Required value: list at least one host:port"}},
		{name: "bad broker", cfg: Config{SeedBrokers: []string{"kafka"}}, errs: []string{`config.seedBrokers[0]: Invalid value: "kafka": want host:port`}},
		{name: "bad port", cfg: Config{SeedBrokers: []string{"kafka:0"}}, errs: []string{`port "0" is not 1-65535`}},
		{name: "bad bootstrap", cfg: Config{SeedBrokers: []string{"k:1"}, Bootstrap: "a:1,b"}, errs: []string{`config.bootstrap: Invalid value: "a:1,b": want comma-separated host:port`}},
		{name: "sasl", cfg: Config{SeedBrokers: []string{"k:1"}, SASL: &SASL{Mechanism: "SCRAM-SHA-512", Username: "u", Password: "p"}}},
		{name: "sasl incomplete", cfg: Config{SeedBrokers: []string{"k:1"}, SASL: &SASL{Mechanism: "GSSAPI"}}, errs: []string{
			`config.sasl.mechanism: Unsupported value: "GSSAPI": supported values: "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"`,
			"config.sasl.username: Required value", "config.sasl.password: Required value"}},
		{name: "tls both ca", cfg: Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CA: "x", CAFile: "y"}}, errs: []string{"config.tls.ca: Forbidden: set caFile or ca, not both"}},
		{name: "tls half pair", cfg: Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CertFile: "c"}}, errs: []string{"config.tls.keyFile: Required value: certFile and keyFile go together"}},
		{name: "tls bad ca", cfg: Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CA: "not pem"}}, errs: []string{"config.tls: Invalid value: ca: no PEM certificate found"}},
		{name: "tls missing file", cfg: Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CAFile: "/nonexistent/ca.pem"}}, errs: []string{"config.tls: Invalid value: caFile: open /nonexistent/ca.pem"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := c.cfg.Validate(field.NewPath("config"))
			if len(errs) != len(c.errs) {
				t.Fatalf("want %d errors %q, got %v", len(c.errs), c.errs, errs)
			}
			for _, e := range c.errs {
				if !strings.Contains(errs.ToAggregate().Error(), e) {
					t.Errorf("want %q in %v", e, errs)
				}
			}
		})
	}
}
