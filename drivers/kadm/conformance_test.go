package kadm

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestConformance runs the drivers' conformance suite (drivers/drivertest)
// on the kadm driver: its validation cases, and the backend contract against
// the kfake broker program (test/kafka).
func TestConformance(t *testing.T) {
	suite.Run(t)
}

// TestDrainContract runs the drain contract (drivertest) on the kfake
// broker program.
func TestDrainContract(t *testing.T) {
	drivertest.DrainContract(t, newFixture(t, kafka.Options{}, nil).drainCase())
}

// bootstrap is the public bootstrap address of the suite's backends.
const bootstrap = "kafka.example:9092"

var suite = &drivertest.Suite{
	Driver:     New(),
	Names:      nameCases,
	Parameters: parameterCases,
	Accesses:   accessCases,
	Configs:    configCases,
	Grants: []drivertest.GrantCase{
		// A plaintext broker cannot tell clients apart: nothing is per access
		// (scoped_test.go covers a SASL broker with ACLs).
		{Name: "read-write is not scoped without sasl", Access: drivers.Access{Resource: "t1", Role: "ReadWrite"}, Want: map[string]string{SecretTopic: "t1"}},
		{Name: "read-only is not enforced", Access: drivers.Access{Resource: "t1", Role: "ReadOnly"}, Want: map[string]string{SecretTopic: "t1"}},
		{Name: "consumer group prefix is not enforced", Access: drivers.Access{Resource: "t1", Role: "ReadWrite", Parameters: map[string]string{AccessConsumerGroupPrefix: "x-"}},
			Want: map[string]string{SecretTopic: "t1"}},
		{Name: "several topics, one Secret", Access: drivers.Access{Role: "ReadWrite", Several: []drivers.AccessResource{{Key: "orders", Name: "t1"}, {Key: "payments_refunds", Name: "t2"}}},
			Want: map[string]string{SecretTopics: "t1,t2", "topic.orders": "t1", "topic.payments_refunds": "t2"}},
	},
	Services: []drivertest.Service{{
		Name: "kfake",
		Open: func(t *testing.T, timeout time.Duration) *drivertest.Target {
			return newFixture(t, kafka.Options{}, func(c *Config) {
				c.Bootstrap = bootstrap
				c.RequestTimeout = drivers.Duration{Duration: timeout}
			}).target()
		},
		Params:        map[string]string{"partitions": "2", "config.retention.ms": "1000", "config.cleanup.policy": "compact"},
		CreateChange:  "create topic %s (partitions 2, replication factor broker default, 2 configs)",
		ContentDetail: "holds 1 records",
		Steps: []drivertest.Step{
			{Params: map[string]string{"partitions": "4", "config.retention.ms": "2000"},
				Changes: []string{"partitions 2 -> 4", `config retention.ms "1000" -> "2000"`, `config cleanup.policy "compact" removed (not in spec; broker default applies)`}},
			{Params: map[string]string{"partitions": "4", "config.retention.ms": "2000", "config.segment.ms": "60000"},
				Changes: []string{`config segment.ms set to "60000"`}},
		},
		Drift:          map[string]string{"partitions": "1"},
		DriftParameter: ParamPartitions,
	}, {
		// SASL/SCRAM with ACLs enforced: a user and ACLs per access.
		Name: "kfake-scoped",
		Open: func(t *testing.T, timeout time.Duration) *drivertest.Target {
			f := newFixture(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true}, func(c *Config) {
				c.Bootstrap = bootstrap
				c.RequestTimeout = drivers.Duration{Duration: timeout}
				c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
			})
			tg := f.target()
			tg.SecretData = map[string]string{SecretBootstrap: bootstrap, SecretSecurityProtocol: "SASL_PLAINTEXT", SecretSASLMechanism: "SCRAM-SHA-512"}
			tg.UseCredentials = func(ctx context.Context, a drivers.Access, data map[string][]byte) error {
				data = maps.Clone(data)
				data[SecretBootstrap] = []byte(f.broker.Bootstrap())
				return useSecret(ctx, a.Resource, data)
			}
			return tg
		},
		Params:         map[string]string{"partitions": "2"},
		CreateChange:   "create topic %s (partitions 2, replication factor broker default, 0 configs)",
		ContentDetail:  "holds 1 records",
		Steps:          []drivertest.Step{{Params: map[string]string{"partitions": "3"}, Changes: []string{"partitions 2 -> 3"}}},
		Drift:          map[string]string{"partitions": "1"},
		DriftParameter: ParamPartitions,
	}},
}

// useSecret produces one record to topic with nothing but a Secret's keys.
func useSecret(ctx context.Context, topic string, data map[string][]byte) error {
	auth := scram.Auth{User: string(data[SecretSASLUsername]), Pass: string(data[SecretSASLPassword])}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(string(data[SecretBootstrap]), ",")...),
		kgo.SASL(auth.AsSha512Mechanism()), kgo.RequestRetries(0), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// target is the fixture as the conformance suite sees it.
func (f *fixture) target() *drivertest.Target {
	return &drivertest.Target{
		Backend:  f.backend,
		Requests: f.counter,
		PutContent: func(t testing.TB, r drivers.Resource) {
			if err := f.kgo.ProduceSync(context.Background(), &kgo.Record{Topic: r.Name, Value: []byte("hello")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		},
		Snapshot: func(t testing.TB, r drivers.Resource) string {
			parts, rf, dyn := f.state(t, r.Name)
			return fmt.Sprintf("%d partitions, replication factor %d, configs %v", parts, rf, dyn)
		},
		SecretData: map[string]string{SecretBootstrap: bootstrap},
		Stop:       f.broker.Stop,
	}
}

var nameCases = []drivertest.NameCase{
	{Name: "tenant1.orders.v003"},
	{Name: "Orders-2024"},
	{Name: strings.Repeat("a", 249)},
	{Name: strings.Repeat("a", 250), Errs: []string{"may not be more than 249 bytes"}},
	{Name: "", Errs: []string{"the topic name is empty"}},
	{Name: ".", Errs: []string{`"." and ".." are not valid topic names`}},
	{Name: "..", Errs: []string{`"." and ".." are not valid topic names`}},
	{Name: "a b/c", Errs: []string{`found " /"`}},
	{Name: "tenant1:orders", Errs: []string{`found ":"`}},
	{Name: "__consumer_offsets", Errs: []string{`reserved for Kafka's internal topics`}},
	{Name: "tenant_1.orders", Warns: []string{"mixes '.' and '_'"}},
}

var parameterCases = []drivertest.ParametersCase{
	{Name: "all kinds", New: map[string]string{"partitions": "12", "replicationFactor": "3", "config.retention.ms": "604800000", "config.cleanup.policy": "delete"}},
	{Name: "empty", New: nil},
	{Name: "zero partitions", New: map[string]string{"partitions": "0"}, Errs: []string{`spec.parameters[partitions]: Invalid value: "0": must be a positive integer`}},
	{Name: "non-numeric partitions", New: map[string]string{"partitions": "twelve"}, Errs: []string{`spec.parameters[partitions]: Invalid value: "twelve"`}},
	{Name: "padded partitions", New: map[string]string{"partitions": "012"}, Errs: []string{`spec.parameters[partitions]: Invalid value: "012"`}},
	{Name: "negative rf", New: map[string]string{"replicationFactor": "-1"}, Errs: []string{`spec.parameters[replicationFactor]: Invalid value: "-1"`}},
	{Name: "huge rf", New: map[string]string{"replicationFactor": "40000"}, Errs: []string{`spec.parameters[replicationFactor]: Invalid value: "40000": must be a positive integer up to 32767`}},
	{Name: "unknown key names the allowed keys", New: map[string]string{"retentionMs": "1"}, Errs: []string{`spec.parameters[retentionMs]: Unsupported value: "retentionMs": supported values: "partitions", "replicationFactor", "config.<kafka topic config>"`}},
	{Name: "overlap with partitions", New: map[string]string{"config.num.partitions": "3"}, Errs: []string{`spec.parameters[config.num.partitions]: Invalid value: "config.num.partitions": duplicates the driver parameter "partitions"; use partitions instead`}},
	{Name: "overlap with replicationFactor", New: map[string]string{"config.replication.factor": "3"}, Errs: []string{`duplicates the driver parameter "replicationFactor"`}},
	{Name: "leader throttle is operational", New: map[string]string{"config.leader.replication.throttled.replicas": "*"}, Errs: []string{`spec.parameters[config.leader.replication.throttled.replicas]: Invalid value: "config.leader.replication.throttled.replicas": leader.replication.throttled.replicas is an operational config that buckety never sets or removes: it is set by kafka-reassign-partitions`}},
	{Name: "follower throttle is operational", New: map[string]string{"config.follower.replication.throttled.replicas": "0:1"}, Errs: []string{`spec.parameters[config.follower.replication.throttled.replicas]: Invalid value: "config.follower.replication.throttled.replicas": follower.replication.throttled.replicas is an operational config`}},
	{Name: "malformed config name", New: map[string]string{"config.Retention.MS": "1"}, Errs: []string{`spec.parameters[config.Retention.MS]: Invalid value: "config.Retention.MS": after "config." must come a Kafka topic config name`}},
	{Name: "empty config name", New: map[string]string{"config.": "1"}, Errs: []string{`spec.parameters[config.]`}},
	{Name: "unknown config warns", New: map[string]string{"config.redpanda.remote.read": "true"}, Warns: []string{`"redpanda.remote.read" is not an Apache Kafka topic config`}},
	{Name: "every bad key at once", New: map[string]string{"partitions": "x", "replicationFactor": "y", "bogus": "z"}, Errs: []string{"[bogus]", "[partitions]", "[replicationFactor]"}},
	{Name: "grow partitions", Old: map[string]string{"partitions": "3"}, New: map[string]string{"partitions": "6"}},
	{Name: "shrink partitions", Old: map[string]string{"partitions": "6"}, New: map[string]string{"partitions": "3"}, Errs: []string{`spec.parameters[partitions]: Forbidden: can only grow (was 6, now 3): Kafka cannot remove partitions`}},
	{Name: "unset partitions", Old: map[string]string{"partitions": "6"}, New: map[string]string{}, Errs: []string{`spec.parameters[partitions]: Forbidden: cannot be removed once set (was 6): Kafka cannot remove partitions, so the topic keeps them`}},
	{Name: "set partitions on a topic that had the broker's", Old: map[string]string{}, New: map[string]string{"partitions": "6"}},
	{Name: "change rf", Old: map[string]string{"replicationFactor": "3"}, New: map[string]string{"replicationFactor": "1"}, Errs: []string{`spec.parameters[replicationFactor]: Forbidden: is immutable after creation (was 3, now 1)`}},
	{Name: "add rf", Old: map[string]string{}, New: map[string]string{"replicationFactor": "3"}, Errs: []string{`is immutable after creation (was unset, now 3)`}},
	{Name: "remove rf", Old: map[string]string{"replicationFactor": "3"}, New: map[string]string{}, Errs: []string{`is immutable after creation (was 3, now unset)`}},
	{Name: "dangerous change warns", Old: map[string]string{"config.cleanup.policy": "delete"}, New: map[string]string{"config.cleanup.policy": "compact"}, Warns: []string{"changing cleanup.policy changes which records the broker deletes"}},
	{Name: "removing a dangerous key warns", Old: map[string]string{"config.retention.ms": "-1"}, New: map[string]string{}, Warns: []string{`spec.parameters[config.retention.ms]: removed (was "-1"), so the broker's default applies: lowering retention.ms deletes records`}},
	{Name: "removing another key does not warn", Old: map[string]string{"config.segment.ms": "3600000"}, New: map[string]string{}},
}

var accessCases = []drivertest.AccessCase{
	{Name: "read-write", Role: "ReadWrite"},
	{Name: "read-only with a prefix: neither enforced", Role: "ReadOnly", Params: map[string]string{AccessConsumerGroupPrefix: "tenant1-orders-reporting-"},
		Warns: []string{"spec.parameters[consumerGroupPrefix]: not enforced on this backend", "role ReadOnly is not enforced on this backend"}},
	{Name: "unknown key and bad prefix", Role: "ReadWrite", Params: map[string]string{"group": "x", AccessConsumerGroupPrefix: "bad prefix"},
		Errs: []string{`spec.parameters[group]: Unsupported value: "group": supported values: "consumerGroupPrefix", "producerByteRate", "consumerByteRate", "requestPercentage", "controllerMutationRate"`, `spec.parameters[consumerGroupPrefix]: Invalid value: "bad prefix"`}},
	{Name: "quotas on a backend with users per access", Role: "ReadOnly", Config: scopedConfig(&Quotas{MaxConsumerByteRate: ptr[int64](1 << 20)}),
		Params: map[string]string{AccessConsumerByteRate: "1048576", AccessRequestPercentage: "12.5"}},
	{Name: "a quota above the maximum", Role: "ReadWrite", Config: scopedConfig(&Quotas{MaxConsumerByteRate: ptr[int64](1 << 20)}),
		Params: map[string]string{AccessConsumerByteRate: "1048577"}, Errs: []string{`spec.parameters[consumerByteRate]: Invalid value: "1048577": consumerByteRate 1048577 is above this backend's maximum of 1048576 (quotas.maxConsumerByteRate)`}},
	{Name: "a quota without users per access", Role: "ReadWrite", Params: map[string]string{AccessProducerByteRate: "1024"},
		Errs: []string{`spec.parameters[producerByteRate]: Forbidden: this backend issues no user per access`}},
}

var configCases = []drivertest.ConfigCase{
	{Name: "minimal", Config: &Config{SeedBrokers: []string{"kafka:9092"}}},
	{Name: "no brokers", Config: &Config{}, Errs: []string{"config.seedBrokers: Required value: list at least one host:port"}},
	{Name: "bad broker", Config: &Config{SeedBrokers: []string{"kafka"}}, Errs: []string{`config.seedBrokers[0]: Invalid value: "kafka": want host:port`}},
	{Name: "bad port", Config: &Config{SeedBrokers: []string{"kafka:0"}}, Errs: []string{`port "0" is not 1-65535`}},
	{Name: "bad bootstrap", Config: &Config{SeedBrokers: []string{"k:1"}, Bootstrap: "a:1,b"}, Errs: []string{`config.bootstrap: Invalid value: "a:1,b": want comma-separated host:port`}},
	{Name: "sasl", Config: &Config{SeedBrokers: []string{"k:1"}, SASL: &SASL{Mechanism: "SCRAM-SHA-512", Username: "u", Password: "p"}}},
	{Name: "sasl incomplete", Config: &Config{SeedBrokers: []string{"k:1"}, SASL: &SASL{Mechanism: "GSSAPI"}}, Errs: []string{
		`config.sasl.mechanism: Unsupported value: "GSSAPI": supported values: "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"`,
		"config.sasl.username: Required value", "config.sasl.password: Required value"}},
	{Name: "tls both ca", Config: &Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CA: "x", CAFile: "y"}}, Errs: []string{"config.tls.ca: Forbidden: set caFile or ca, not both"}},
	{Name: "tls half pair", Config: &Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CertFile: "c"}}, Errs: []string{"config.tls.keyFile: Required value: certFile and keyFile go together"}},
	{Name: "tls bad ca", Config: &Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CA: "not pem"}}, Errs: []string{"config.tls: Invalid value: ca: no PEM certificate found"}},
	{Name: "tls missing file", Config: &Config{SeedBrokers: []string{"k:1"}, TLS: &TLS{CAFile: "/nonexistent/ca.pem"}}, Errs: []string{"config.tls: Invalid value: caFile: open /nonexistent/ca.pem"}},
	// Sharing is refused where there is nothing to share.
	{Name: "share credentials without sasl", Config: &Config{SeedBrokers: []string{"k0:9092"}, ShareCredentials: true}, Errs: []string{"config.shareCredentials: "}},
	{Name: "share credentials over TLS only", Config: &Config{SeedBrokers: []string{"k0:9093"}, TLS: &TLS{}, ShareCredentials: true}, Errs: []string{"config.shareCredentials: "}},
	{Name: "share credentials with sasl", Config: &Config{SeedBrokers: []string{"k0:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, ShareCredentials: true}},
	// credentials.mode: one of two values, both on sasl, PerAccess not
	// with shareCredentials (which means Shared), Shared issuing nothing.
	{Name: "credentials mode unknown", Config: &Config{SeedBrokers: []string{"k0:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, Credentials: &Credentials{Mode: "Scoped"}},
		Errs: []string{`config.credentials.mode: Unsupported value: "Scoped": supported values: "PerAccess", "Shared"`}},
	{Name: "credentials mode PerAccess with shareCredentials", Config: &Config{SeedBrokers: []string{"k0:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, ShareCredentials: true, Credentials: &Credentials{Mode: drivers.PerAccess}},
		Errs: []string{`config.credentials.mode: Invalid value: "PerAccess": shareCredentials: true means credentials.mode: Shared`}},
	{Name: "credentials mode PerAccess without sasl", Config: &Config{SeedBrokers: []string{"k0:9092"}, Credentials: &Credentials{Mode: drivers.PerAccess}},
		Errs: []string{`config.credentials.mode: Invalid value: "PerAccess": needs sasl`}},
	{Name: "credentials mode Shared without sasl", Config: &Config{SeedBrokers: []string{"k0:9092"}, Credentials: &Credentials{Mode: drivers.Shared}},
		Errs: []string{`config.credentials.mode: Invalid value: "Shared": needs sasl`}},
	{Name: "credentials mode Shared with a mechanism", Config: &Config{SeedBrokers: []string{"k0:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, Credentials: &Credentials{Mode: drivers.Shared, Mechanism: "SCRAM-SHA-256"}},
		Errs: []string{`config.credentials.mechanism: Forbidden: with credentials.mode Shared`}},
	{Name: "shareCredentials with a mechanism", Config: &Config{SeedBrokers: []string{"k0:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, ShareCredentials: true, Credentials: &Credentials{Mechanism: "SCRAM-SHA-256"}},
		Errs: []string{`config.credentials.mechanism: Forbidden: with credentials.mode Shared (or shareCredentials)`}},
	{Name: "credentials mode PerAccess with a mechanism", Config: &Config{SeedBrokers: []string{"k0:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, Credentials: &Credentials{Mode: drivers.PerAccess, Mechanism: "SCRAM-SHA-256"}}},
	{Name: "credentials mode Shared with shareCredentials", Config: &Config{SeedBrokers: []string{"k0:9092"}, SASL: &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}, ShareCredentials: true, Credentials: &Credentials{Mode: drivers.Shared}}},
	{Name: "quota defaults within maxima", Config: scopedConfig(&Quotas{MaxProducerByteRate: ptr[int64](1 << 20), DefaultProducerByteRate: ptr[int64](1 << 19)})},
	{Name: "quota default above maximum", Config: scopedConfig(&Quotas{MaxRequestPercentage: ptr(25.0), DefaultRequestPercentage: ptr(30.0)}),
		Errs: []string{`config.quotas.defaultRequestPercentage: Invalid value: "30": is above maxRequestPercentage (25)`}},
	{Name: "quotas without sasl", Config: &Config{SeedBrokers: []string{"k0:9092"}, Quotas: &Quotas{}}, Errs: []string{"config.quotas: Forbidden: "}},
}
