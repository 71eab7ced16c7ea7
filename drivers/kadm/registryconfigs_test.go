package kadm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// openOnRegistry opens a backend of its own on f's broker whose owner
// registry is topic, with a counter of its requests.
func (f *fixture) openOnRegistry(t *testing.T, topic string) (*Backend, *drivertest.Requests) {
	t.Helper()
	cfg := *f.backend.cfg
	cfg.OwnerRegistry = &OwnerRegistry{Topic: topic}
	counter := &drivertest.Requests{IsWrite: func(api string) bool { return writeAPIs[api] }}
	be, err := (&Driver{Hooks: []kgo.Hook{requestHook{counter}}}).Open(context.Background(), "kafka", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return be.(*Backend), counter
}

// createByHand creates topic with cleanup.policy policy, as an operator
// or an older tool would, with the fixture's independent client.
func (f *fixture) createByHand(t *testing.T, topic, policy string) {
	t.Helper()
	resp, err := f.admin.CreateTopic(context.Background(), 1, -1, map[string]*string{"cleanup.policy": &policy}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s by hand with cleanup.policy=%s: %v %v", topic, policy, err, resp.Err)
	}
}

// fixCommand is the command the probe's message gives for topic.
func fixCommand(topic string) string {
	return "kafka-configs --alter --entity-type topics --entity-name " + topic + " --add-config cleanup.policy=compact"
}

// wantRegistryWarned checks that the probe of be passed (err is its
// error: the cluster answers and be serves) and that be warns of registry
// topic with policy, reason RegistryNotCompacted, naming the topic, the
// config and the fix.
func wantRegistryWarned(t *testing.T, be *Backend, err error, topic, policy string) {
	t.Helper()
	if err != nil {
		t.Errorf("registry %s with cleanup.policy=%s: want the probe to pass (the backend serves) and warn, got %v", topic, policy, err)
	}
	ws := be.ProbeWarnings()
	if len(ws) != 1 {
		t.Fatalf("registry %s with cleanup.policy=%s: want one warning, got %+v", topic, policy, ws)
	}
	t.Logf("warning: %s: %s", ws[0].Reason, ws[0].Message)
	if ws[0].Reason != ReasonRegistryNotCompacted {
		t.Errorf("want reason %s, got %s", ReasonRegistryNotCompacted, ws[0].Reason)
	}
	for _, want := range []string{"owner registry " + topic, "cleanup.policy=" + policy, fixCommand(topic)} {
		if !strings.Contains(ws[0].Message, want) {
			t.Errorf("want the warning to say %q, got %q", want, ws[0].Message)
		}
	}
}

// wantNoWarning checks that the probe of be passed (err is its error)
// without a warning.
func wantNoWarning(t *testing.T, be *Backend, err error, what string) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: want the probe to pass, got %v", what, err)
	}
	if ws := be.ProbeWarnings(); len(ws) != 0 {
		t.Errorf("%s: want no warning, got %+v", what, ws)
	}
}

// TestProbeReportsRegistryThatDeletesRecords: a registry created by hand
// before the backend first used it, whose cleanup.policy lets the brokers
// delete records (delete, or compact,delete), is the probe's warning, with
// the topic, the config and the fix, once the backend learned it exists:
// from the verdict its first catch-up made, without a request of the
// probe's own. The probe passes all the same: the backend serves. A
// compacted registry is no warning. The backend still reads and writes its
// records on either, and leaves the registry's config as it is.
func TestProbeReportsRegistryThatDeletesRecords(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		topic, policy string
		reported      bool
	}{
		{"__owners-delete", "delete", true},
		{"__owners-compact-delete", "compact,delete", true},
		{"__owners-compact", "compact", false},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			f.createByHand(t, tc.topic, tc.policy)
			be, counter := f.openOnRegistry(t, tc.topic)
			// First use: reads are served from the registry as it is.
			if got, err := be.ReadOwner(ctx, drivers.Resource{Name: "t1"}); err != nil || got != nil {
				t.Fatalf("first read: want no record, got %v, %v", got, err)
			}
			counter.Reset()
			err := be.Probe(ctx)
			if tc.reported {
				wantRegistryWarned(t, be, err, tc.topic, tc.policy)
			} else {
				wantNoWarning(t, be, err, "compacted registry")
			}
			if n := counter.Ops()["DescribeConfigs"]; n != 0 {
				t.Errorf("want the probe to report the verdict of the first catch-up without reading the configs again, got %d DescribeConfigs", n)
			}
			rec := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "b", UID: "u", State: drivers.OwnerHeld}
			if err := be.WriteOwner(ctx, drivers.Resource{Name: "t1"}, rec); err != nil {
				t.Fatalf("want records written meanwhile, got %v", err)
			}
			other, _ := f.openOnRegistry(t, tc.topic)
			if got, err := other.ReadOwner(ctx, drivers.Resource{Name: "t1"}); err != nil || !got.Same(rec) {
				t.Errorf("want the record read by another installation, got %v, %v", got, err)
			}
			if _, _, dyn := f.state(t, tc.topic); dyn["cleanup.policy"] != tc.policy {
				t.Errorf("want the registry's cleanup.policy left at %s, got %q", tc.policy, dyn["cleanup.policy"])
			}
		})
	}
}

// TestProbeReadsRegistryConfigsEveryFewMinutes: a registry altered with
// kafka-configs after the backend judged it shows in the probe's warnings
// once the verdict is registryConfigsEvery old, and not before: the probes
// in between read no configs. Set compacted again, it is no longer a
// warning.
func TestProbeReadsRegistryConfigsEveryFewMinutes(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	topic := f.backend.cfg.registryTopic()
	// First use: the backend creates the registry, compacted.
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "t1"}, &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "b", UID: "u", State: drivers.OwnerHeld}); err != nil {
		t.Fatal(err)
	}
	wantNoWarning(t, f.backend, f.backend.Probe(ctx), "registry the backend created")
	policy := "delete"
	f.setOutOfBand(t, topic, kadm.AlterConfig{Name: "cleanup.policy", Value: &policy})
	f.counter.Reset()
	wantNoWarning(t, f.backend, f.backend.Probe(ctx), "within registryConfigsEvery of the last reading: the verdict held")
	if n := f.counter.Ops()["DescribeConfigs"]; n != 0 {
		t.Errorf("within registryConfigsEvery of the last reading: want no DescribeConfigs, got %d", n)
	}
	later := time.Now().Add(registryConfigsEvery)
	f.backend.observed.now = func() time.Time { return later }
	wantRegistryWarned(t, f.backend, f.backend.Probe(ctx), topic, policy)
	if n := f.counter.Ops()["DescribeConfigs"]; n != 1 {
		t.Errorf("a verdict registryConfigsEvery old: want one DescribeConfigs, got %d", n)
	}
	compact := "compact"
	f.setOutOfBand(t, topic, kadm.AlterConfig{Name: "cleanup.policy", Value: &compact})
	later = later.Add(registryConfigsEvery)
	wantNoWarning(t, f.backend, f.backend.Probe(ctx), "registry compacted again")
}

// TestProbeReportsRegistryCreatedAgainAtOnce: a registry deleted and
// created again by hand without compaction is judged as soon as a
// catch-up finds it created again (a new topic ID), not
// registryConfigsEvery after the old one was.
func TestProbeReportsRegistryCreatedAgainAtOnce(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	topic := f.backend.cfg.registryTopic()
	rec := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "b", UID: "u", State: drivers.OwnerHeld}
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "t1"}, rec); err != nil {
		t.Fatal(err)
	}
	wantNoWarning(t, f.backend, f.backend.Probe(ctx), "registry the backend created")
	epoch := f.backend.RegistryEpoch()
	resp, err := f.admin.DeleteTopics(ctx, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("delete the registry: %v %v", err, resp[topic].Err)
	}
	f.createByHand(t, topic, "delete")
	if err := f.backend.CatchUpRegistry(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if f.backend.RegistryEpoch() == epoch {
		t.Fatal("the test expects the catch-up to find the registry created again")
	}
	wantRegistryWarned(t, f.backend, f.backend.Probe(ctx), topic, "delete")
}

// TestProbeWithoutRegistry: before any registry exists the probe passes
// and creates none (the backend creates it compacted on first use).
func TestProbeWithoutRegistry(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	wantNoWarning(t, f.backend, f.backend.Probe(ctx), "no registry")
	st, err := f.backend.describe(ctx, f.backend.cfg.registryTopic(), false)
	if err != nil || st.exists {
		t.Errorf("want the probe to create no registry, got exists=%v, %v", st.exists, err)
	}
	if counts := f.counter.Ops(); counts["CreateTopics"] != 0 {
		t.Errorf("want no CreateTopics from the probe, got %v", counts)
	}
}

// TestUnsoundMessage: only a policy of compact alone keeps the records.
func TestUnsoundMessage(t *testing.T) {
	retention := map[string]string{"retention.ms": "604800000", "retention.bytes": "-1"}
	for policy, sound := range map[string]bool{
		"compact":          true,
		"compact, compact": true,
		"delete":           false,
		"compact,delete":   false,
		"delete,compact":   false,
		"":                 false,
	} {
		msg := unsoundMessage("__r", policy, retention)
		if sound != (msg == "") {
			t.Errorf("cleanup.policy %q: want sound %v, got message %q", policy, sound, msg)
			continue
		}
		if !sound {
			for _, want := range []string{"cleanup.policy=" + policy + " (retention.ms=604800000, retention.bytes=-1)", fixCommand("__r")} {
				if !strings.Contains(msg, want) {
					t.Errorf("cleanup.policy %q: want the message to say %q, got %q", policy, want, msg)
				}
			}
		}
	}
}

// TestProbeWarnsWhenRegistryConfigsAreRefused: a backend whose principal
// the brokers refuse DescribeConfigs on the owner registry cannot tell
// whether the registry keeps its records. That is the probe's warning,
// reason RegistryConfigsUnreadable, naming the topic and the right to
// grant, not a registry taken for sound because nobody could look; the
// probe passes and the backend writes its records meanwhile. Once the
// operator grants the right, the next reading (registryConfigsEvery
// later) judges the configs as usual: a compacted registry is no warning,
// one that deletes records is RegistryNotCompacted.
func TestProbeWarnsWhenRegistryConfigsAreRefused(t *testing.T) {
	const user, password = "bky-backend", "backend-s3cr3t"
	f := newFixture(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:admin:s3cr3t"}, ACLs: true}, func(c *Config) {
		c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "admin", Password: "s3cr3t"}
	})
	ctx := context.Background()
	topic := f.backend.cfg.registryTopic()
	if _, err := f.admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password}}); err != nil {
		t.Fatal(err)
	}
	allow := kadm.NewACLs().Allow("User:" + user).AllowHosts("*").Topics("*").Clusters().Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral)
	deny := kadm.NewACLs().Deny("User:" + user).DenyHosts("*").Topics(topic).Operations(kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternLiteral)
	for _, b := range []*kadm.ACLBuilder{allow, deny} {
		res, err := f.admin.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("ACL %+v: %v", r, r.Err)
			}
		}
	}
	f.createByHand(t, topic, "delete")

	cfg := *f.backend.cfg
	cfg.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: user, Password: password}
	d, err := (&Driver{}).Open(ctx, "kafka", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	be := d.(*Backend)
	be.SetInstallation("east", nil)
	rec := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "b", UID: "u", State: drivers.OwnerHeld}
	if err := be.WriteOwner(ctx, drivers.Resource{Name: "t1"}, rec); err != nil {
		t.Fatalf("want records written although the registry's configs are refused, got %v", err)
	}
	if err := be.Probe(ctx); err != nil {
		t.Fatalf("want the probe to pass (the backend serves), got %v", err)
	}
	ws := be.ProbeWarnings()
	if len(ws) != 1 || ws[0].Reason != ReasonRegistryConfigsUnreadable {
		t.Fatalf("registry configs refused: want one warning of reason %s, got %+v", ReasonRegistryConfigsUnreadable, ws)
	}
	t.Logf("warning: %s: %s", ws[0].Reason, ws[0].Message)
	for _, want := range []string{"owner registry " + topic, "DescribeConfigs", "--allow-principal User:" + user + " --operation DescribeConfigs --topic " + topic} {
		if !strings.Contains(ws[0].Message, want) {
			t.Errorf("want the warning to say %q, got %q", want, ws[0].Message)
		}
	}
	if strings.Contains(ws[0].Message, password) {
		t.Errorf("the warning names the backend's password: %q", ws[0].Message)
	}

	// The operator grants the right: the next reading judges the configs.
	dres, err := f.admin.DeleteACLs(ctx, kadm.NewACLs().Deny("User:"+user).DenyHosts("*").Topics(topic).Operations(kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || len(dres) == 0 || dres[0].Err != nil {
		t.Fatalf("delete the deny ACL: %v %+v", err, dres)
	}
	later := time.Now().Add(registryConfigsEvery)
	be.observed.now = func() time.Time { return later }
	wantRegistryWarned(t, be, be.Probe(ctx), topic, "delete")
	compact := "compact"
	f.setOutOfBand(t, topic, kadm.AlterConfig{Name: "cleanup.policy", Value: &compact})
	later = later.Add(registryConfigsEvery)
	wantNoWarning(t, be, be.Probe(ctx), "registry compacted, its configs readable")
}
