package kadm

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestProbeWarnsWhenBrokersAllowWithoutACLs: a broker with
// allow.everyone.if.no.acl.found=true lets every user, an access's own
// among them, do what no ACL names: the owner registry and every topic no
// access is scoped to. The issuing probe only asked whether the cluster
// has an authorizer, so a backend issuing per-access users there reported
// its tenants kept apart. The probe now warns (Degraded,
// BrokersAllowWithoutACLs) where the backend issues per-access users; a
// broker with Kafka's default, or a backend that issues none, is not
// warned of, and the brokers are read at most once every
// registryConfigsEvery.
func TestProbeWarnsWhenBrokersAllowWithoutACLs(t *testing.T) {
	ctx := context.Background()
	open := map[string]string{allowEveryoneKey: "true"}
	scoped := func(c *Config) {
		c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
	}
	cases := []struct {
		name   string
		opts   kafka.Options
		mutate func(*Config)
		want   bool
	}{
		{"per-access users, allow.everyone true", kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, BrokerConfigs: open}, scoped, true},
		{"per-access users, Kafka's default", kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true}, scoped, false},
		{"per-access users, allow.everyone false", kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, BrokerConfigs: map[string]string{allowEveryoneKey: "false"}}, scoped, false},
		{"no sasl: no per-access users to warn of", kafka.Options{BrokerConfigs: open}, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.opts, c.mutate)
			if err := f.backend.Probe(ctx); err != nil {
				t.Fatalf("want the probe to pass, got %v", err)
			}
			var got []string
			for _, w := range f.backend.ProbeWarnings() {
				if w.Reason == ReasonBrokersAllowWithoutACLs {
					got = append(got, w.Message)
				}
			}
			if !c.want {
				if len(got) != 0 {
					t.Errorf("want no %s warning, got %q", ReasonBrokersAllowWithoutACLs, got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one %s warning, got %q", ReasonBrokersAllowWithoutACLs, got)
			}
			for _, want := range []string{allowEveryoneKey + "=true", allowEveryoneKey + "=false", f.backend.cfg.registryTopic(), "per-access users do not keep tenants apart"} {
				if !strings.Contains(got[0], want) {
					t.Errorf("want the warning to name %q, got %q", want, got[0])
				}
			}
			// Read once every registryConfigsEvery, not every probe.
			if n := f.counter.Ops()["DescribeConfigs"]; n < 2 {
				t.Fatalf("want the first probe to read the registry's configs and the broker's, got %d DescribeConfigs", n)
			}
			f.counter.Reset()
			if err := f.backend.Probe(ctx); err != nil {
				t.Fatal(err)
			}
			if n := f.counter.Ops()["DescribeConfigs"]; n != 0 {
				t.Errorf("want no DescribeConfigs on a probe within %s of the last reading, got %d", registryConfigsEvery, n)
			}
			if len(f.backend.ProbeWarnings()) == 0 {
				t.Error("want the verdict kept between readings")
			}
		})
	}
}

// TestProbeWarnsWhenBrokerConfigsAreRefused: a backend principal that may
// not DescribeConfigs on the cluster cannot tell whether the brokers let
// every user do what no ACL names. The failed reading was dropped, so a
// cluster open that way showed no warning at all (and one fixed while the
// right was taken away kept its old warning for ever). The refusal is a
// verdict of its own, naming the ACL to grant.
func TestProbeWarnsWhenBrokerConfigsAreRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, BrokerConfigs: map[string]string{allowEveryoneKey: "true"}}, func(c *Config) {
		c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
	})
	// An operator's principal with the cluster rights buckety's users
	// and ACLs need, and not DescribeConfigs.
	if _, err := f.admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "ops", Mechanism: kadm.ScramSha512, Iterations: scramIterations, Password: "opspw"}}); err != nil {
		t.Fatal(err)
	}
	acl := kadm.NewACLs().Allow("User:ops").Clusters().Operations(kadm.OpAlter, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := f.admin.CreateACLs(ctx, acl); err != nil {
		t.Fatal(err)
	}
	ops := f.openWith(t, func(c *Config) { c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "ops", Password: "opspw"} })
	if err := ops.Probe(ctx); err != nil {
		t.Fatalf("want the probe to pass, got %v", err)
	}
	var got []string
	for _, w := range ops.ProbeWarnings() {
		if w.Reason == ReasonBrokerConfigsUnreadable {
			got = append(got, w.Message)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want one %s warning, got %+v", ReasonBrokerConfigsUnreadable, ops.ProbeWarnings())
	}
	for _, want := range []string{"User:ops", "--operation DescribeConfigs --cluster", allowEveryoneKey} {
		if !strings.Contains(got[0], want) {
			t.Errorf("want the warning to name %q, got %q", want, got[0])
		}
	}
}

// TestHiddenAllowEveryoneIsNotAnAllClear: Apache Kafka reports a broker
// setting it has no type for as sensitive with no value, and
// allow.everyone.if.no.acl.found is its authorizer's, not the broker's:
// a cluster that sets it true in server.properties answers the key with a
// null value. That answer read as false, an all-clear on the very cluster
// the warning is for. A hidden value is now a warning of its own naming
// the brokers and the way to clear it; a value in the clear is judged as
// before, and one broker found open still says so.
func TestHiddenAllowEveryoneIsNotAnAllClear(t *testing.T) {
	b := &Backend{name: "kafka", cfg: &Config{}}
	val := func(v string) *string { return &v }
	broker := func(name string, cs ...kadm.Config) kadm.ResourceConfig {
		return kadm.ResourceConfig{Name: name, Configs: cs}
	}
	hidden := kadm.Config{Key: allowEveryoneKey, Sensitive: true}
	for _, tc := range []struct {
		name   string
		rcs    kadm.ResourceConfigs
		reason string
		names  []string
	}{
		{"Apache Kafka with it set: sensitive, no value", kadm.ResourceConfigs{broker("1", hidden), broker("2", hidden)}, ReasonBrokersHideAllowWithoutACLs, []string{"broker 1, 2", "remove it from the brokers' config"}},
		{"no value, not marked sensitive", kadm.ResourceConfigs{broker("1", kadm.Config{Key: allowEveryoneKey})}, ReasonBrokersHideAllowWithoutACLs, []string{"broker 1 "}},
		{"one broker hides it, one does not have it", kadm.ResourceConfigs{broker("1"), broker("2", hidden)}, ReasonBrokersHideAllowWithoutACLs, []string{"broker 2 "}},
		{"one hides it, one says true", kadm.ResourceConfigs{broker("1", hidden), broker("2", kadm.Config{Key: allowEveryoneKey, Value: val("true")})}, ReasonBrokersAllowWithoutACLs, []string{"broker 2 "}},
		{"in the clear, false", kadm.ResourceConfigs{broker("1", kadm.Config{Key: allowEveryoneKey, Value: val("false")})}, "", nil},
		{"not set (Kafka's default, Redpanda)", kadm.ResourceConfigs{broker("1", kadm.Config{Key: "broker.rack", Value: val("r1")})}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := b.judgeBrokerConfigs(tc.rcs, nil)
			if err != nil {
				t.Fatal(err)
			}
			if w.Reason != tc.reason {
				t.Fatalf("want reason %q, got %q (%s)", tc.reason, w.Reason, w.Message)
			}
			for _, n := range tc.names {
				if !strings.Contains(w.Message, n) {
					t.Errorf("want the warning to say %q, got %q", n, w.Message)
				}
			}
		})
	}
}
