package kadm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// requestHook counts, by Kafka API name, the requests the backend's client
// sent and the broker answered.
type requestHook struct{ requests *drivertest.Requests }

func (h requestHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil {
		h.requests.Add(kmsg.NameForKey(key))
	}
}

// writeAPIs are the Kafka APIs the driver sends that change the cluster.
var writeAPIs = map[string]bool{
	kmsg.NameForKey(kmsg.CreateTopics.Int16()):              true,
	kmsg.NameForKey(kmsg.DeleteTopics.Int16()):              true,
	kmsg.NameForKey(kmsg.CreatePartitions.Int16()):          true,
	kmsg.NameForKey(kmsg.AlterConfigs.Int16()):              true,
	kmsg.NameForKey(kmsg.IncrementalAlterConfigs.Int16()):   true,
	kmsg.NameForKey(kmsg.DeleteRecords.Int16()):             true,
	kmsg.NameForKey(kmsg.AlterUserSCRAMCredentials.Int16()): true,
	kmsg.NameForKey(kmsg.CreateACLs.Int16()):                true,
	kmsg.NameForKey(kmsg.DeleteACLs.Int16()):                true,
	kmsg.NameForKey(kmsg.AlterClientQuotas.Int16()):         true,
}

type fixture struct {
	broker  *kafka.Broker
	backend *Backend
	counter *drivertest.Requests
	// admin is an independent client acting "out of band", as an operator
	// with rpk or kafka-configs would.
	admin *kadm.Client
	kgo   *kgo.Client
}

func newFixture(t testing.TB, opts kafka.Options, mutate func(*Config)) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker; run without -short (make test)")
	}
	b := kafka.Start(t, opts)
	cfg := &Config{SeedBrokers: b.Addrs, ClientID: "buckety-test", RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}
	if mutate != nil {
		mutate(cfg)
	}
	if errs := cfg.Validate(field.NewPath("config")); len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	counter := &drivertest.Requests{IsWrite: func(api string) bool { return writeAPIs[api] }}
	d := &Driver{Hooks: []kgo.Hook{requestHook{counter}}}
	be, err := d.Open(context.Background(), "kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	opts2, err := cfg.clientOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts2...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// Told its installation as the controller tells it: the one of the
	// records heldBy composes.
	be.(*Backend).SetInstallation("east", nil)
	return &fixture{broker: b, backend: be.(*Backend), counter: counter, admin: kadm.NewClient(cl), kgo: cl}
}

func (f *fixture) ensure(t *testing.T, name string, params map[string]string) drivers.EnsureResult {
	t.Helper()
	res, err := f.backend.Ensure(context.Background(), drivers.Resource{Name: name, Parameters: params})
	if err != nil {
		t.Fatalf("Ensure(%s, %v): %v", name, params, err)
	}
	return res
}

// state reads a topic from the broker with the independent client.
func (f *fixture) state(t testing.TB, topic string) (partitions int, rf int, dynamic map[string]string) {
	t.Helper()
	ctx := context.Background()
	var st topicState
	var err error
	// Give the out-of-band client fresh metadata.
	for i := 0; i < 50; i++ {
		st, err = f.backend.describe(ctx, topic, true)
		if err == nil && st.exists {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || !st.exists {
		t.Fatalf("topic %s: exists=%v err=%v", topic, st.exists, err)
	}
	return int(st.partitions), int(st.replicationFactor), st.dynamic
}

func (f *fixture) setOutOfBand(t *testing.T, topic string, alters ...kadm.AlterConfig) {
	t.Helper()
	resps, err := f.admin.AlterTopicConfigs(context.Background(), alters, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := resps.On(topic, nil); err != nil || r.Err != nil {
		t.Fatalf("out-of-band alter: %v %v", err, r.Err)
	}
}

func TestEnsureCreateWithEveryParameterKind(t *testing.T) {
	f := newFixture(t, kafka.Options{Brokers: 3}, nil)
	res := f.ensure(t, "tenant1.orders.v003", map[string]string{
		"partitions":               "6",
		"replicationFactor":        "3",
		"config.retention.ms":      "604800000",
		"config.cleanup.policy":    "compact",
		"config.max.message.bytes": "2097152",
	})
	if !res.Created {
		t.Errorf("want Created, got %+v", res)
	}
	parts, rf, dyn := f.state(t, "tenant1.orders.v003")
	if parts != 6 || rf != 3 {
		t.Errorf("want 6 partitions and replication factor 3, got %d and %d", parts, rf)
	}
	want := map[string]string{"retention.ms": "604800000", "cleanup.policy": "compact", "max.message.bytes": "2097152"}
	for k, v := range want {
		if dyn[k] != v {
			t.Errorf("config %s: want %q, got %q (all: %v)", k, v, dyn[k], dyn)
		}
	}
	if len(dyn) != len(want) {
		t.Errorf("want exactly %d dynamic configs, got %v", len(want), dyn)
	}
}

func TestEnsureOmittedMeansBrokerDefault(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	f.ensure(t, "defaults", nil)
	parts, _, dyn := f.state(t, "defaults")
	if parts != 1 || len(dyn) != 0 {
		t.Errorf("want the broker default of 1 partition and no topic configs, got %d partitions and %v", parts, dyn)
	}
	// Omitted partitions are never touched later, even when the topic grew.
	if resp, err := f.admin.UpdatePartitions(context.Background(), 4, "defaults"); err != nil || resp.Error() != nil {
		t.Fatalf("grow out of band: %v %v", err, resp.Error())
	}
	f.counter.Reset()
	res := f.ensure(t, "defaults", nil)
	if w, _ := f.counter.Reset(); len(w) != 0 || len(res.Changes) != 0 {
		t.Errorf("want no writes for unset partitions, got writes %v, changes %v", w, res.Changes)
	}
}

func TestEnsureGrowsPartitionsAndReportsShrinkAsDrift(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	f.ensure(t, "grow", map[string]string{"partitions": "2"})
	res := f.ensure(t, "grow", map[string]string{"partitions": "5"})
	if parts, _, _ := f.state(t, "grow"); parts != 5 {
		t.Fatalf("want 5 partitions, got %d", parts)
	}
	if len(res.Changes) != 1 || res.Changes[0] != "partitions 2 -> 5" {
		t.Errorf("want change \"partitions 2 -> 5\", got %v", res.Changes)
	}
	f.counter.Reset()
	_, err := f.backend.Ensure(context.Background(), drivers.Resource{Name: "grow", Parameters: map[string]string{"partitions": "3", "config.retention.ms": "5000"}})
	var drift *drivers.DriftError
	if !errors.As(err, &drift) {
		t.Fatalf("want *drivers.DriftError for a shrink, got %v", err)
	}
	if drift.Parameter != "partitions" || drift.Current != "5" || drift.Desired != "3" {
		t.Errorf("want drift partitions current 5 desired 3, got %+v", drift)
	}
	if parts, _, dyn := f.state(t, "grow"); parts != 5 || dyn["retention.ms"] != "5000" {
		t.Errorf("want partitions untouched (5) and the repairable config applied, got %d and %v", parts, dyn)
	}
	if w, _ := f.counter.Reset(); len(w) != 1 || w[0] != "IncrementalAlterConfigs" {
		t.Errorf("want exactly one write (the config), never a partition request, got %v", w)
	}
}

func TestEnsureRevertsOutOfBandConfigChanges(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	params := map[string]string{"config.retention.ms": "604800000"}
	f.ensure(t, "drift", params)
	f.setOutOfBand(t, "drift",
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")})
	res := f.ensure(t, "drift", params)
	_, _, dyn := f.state(t, "drift")
	if dyn["retention.ms"] != "604800000" {
		t.Errorf("want retention.ms reverted to 604800000, got %q", dyn["retention.ms"])
	}
	if _, ok := dyn["cleanup.policy"]; ok {
		t.Errorf("want the out-of-band cleanup.policy removed, got %v", dyn)
	}
	want := []string{`config retention.ms "1" -> "604800000"`, `config cleanup.policy "compact" removed (not in spec; broker default applies)`}
	if strings.Join(res.Changes, "|") != strings.Join(want, "|") {
		t.Errorf("want changes %q, got %q", want, res.Changes)
	}
}

func TestEnsureRemovedKeyRevertsToDefault(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	f.ensure(t, "revert", map[string]string{"config.retention.ms": "1000", "config.segment.ms": "60000"})
	f.ensure(t, "revert", map[string]string{"config.segment.ms": "60000"})
	_, _, dyn := f.state(t, "revert")
	if _, ok := dyn["retention.ms"]; ok || dyn["segment.ms"] != "60000" {
		t.Errorf("want retention.ms back to the broker default and segment.ms kept, got %v", dyn)
	}
}

func TestRequestErrorIsNotUnavailable(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	// One broker answers; a replication factor of 7 is impossible.
	_, err := f.backend.Ensure(context.Background(), drivers.Resource{Name: "rf", Parameters: map[string]string{"replicationFactor": "7"}})
	if err == nil {
		t.Fatal("want the broker to refuse replication factor 7 on one broker")
	}
	if !strings.Contains(err.Error(), "create topic rf") {
		t.Errorf("want the error to say what failed, got %v", err)
	}
	if drivers.IsUnavailable(err) {
		t.Fatalf("a broker's answer must not read as unavailability: %v", err)
	}
}

// TestEnsureLeavesOperationalConfigsAlone: the replication throttles that
// kafka-reassign-partitions and Cruise Control set during a reassignment
// survive a re-check, while every other out-of-band config is still
// reverted.
func TestEnsureLeavesOperationalConfigsAlone(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	params := map[string]string{"partitions": "2", "config.retention.ms": "604800000"}
	f.ensure(t, "moving", params)
	throttles := map[string]string{
		"leader.replication.throttled.replicas":   "0:0,1:0",
		"follower.replication.throttled.replicas": "0:1,1:1",
	}
	f.setOutOfBand(t, "moving",
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: kadm.StringPtr(throttles["leader.replication.throttled.replicas"])},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: kadm.StringPtr(throttles["follower.replication.throttled.replicas"])},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("1")},
		kadm.AlterConfig{Op: kadm.SetConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")})
	res := f.ensure(t, "moving", params)
	_, _, dyn := f.state(t, "moving")
	for k, v := range throttles {
		if dyn[k] != v {
			t.Errorf("operational config %s: want %q kept, got %q (all: %v)", k, v, dyn[k], dyn)
		}
	}
	if dyn["retention.ms"] != "604800000" {
		t.Errorf("want retention.ms reverted to 604800000, got %q", dyn["retention.ms"])
	}
	if _, ok := dyn["cleanup.policy"]; ok {
		t.Errorf("want the out-of-band cleanup.policy removed, got %v", dyn)
	}
	want := []string{`config retention.ms "1" -> "604800000"`, `config cleanup.policy "compact" removed (not in spec; broker default applies)`}
	if strings.Join(res.Changes, "|") != strings.Join(want, "|") {
		t.Errorf("want changes %q, got %q", want, res.Changes)
	}
	// Converged apart from the throttles: the next pass writes nothing.
	f.counter.Reset()
	res = f.ensure(t, "moving", params)
	if w, _ := f.counter.Reset(); len(w) != 0 || len(res.Changes) != 0 {
		t.Errorf("want no writes while only the throttles differ, got writes %v, changes %v", w, res.Changes)
	}
}

// TestEnsureNeverAppliesOperationalParameters: a spec admitted before the
// operational configs were refused neither sets them at creation nor
// removes Kafka's values later; each is reported as a shortfall.
func TestEnsureNeverAppliesOperationalParameters(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	params := map[string]string{"config.leader.replication.throttled.replicas": "*", "config.segment.ms": "60000"}
	res := f.ensure(t, "old-spec", params)
	if len(res.Shortfalls) != 1 || res.Shortfalls[0].Parameter != "config.leader.replication.throttled.replicas" || !strings.Contains(res.Shortfalls[0].Message, "never sets or removes") {
		t.Errorf("create: want one shortfall for the throttle, got %+v", res.Shortfalls)
	}
	_, _, dyn := f.state(t, "old-spec")
	if _, ok := dyn["leader.replication.throttled.replicas"]; ok || dyn["segment.ms"] != "60000" {
		t.Errorf("create: want segment.ms set and no throttle, got %v", dyn)
	}
	f.setOutOfBand(t, "old-spec", kadm.AlterConfig{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: kadm.StringPtr("0:0")})
	res = f.ensure(t, "old-spec", params)
	if len(res.Changes) != 0 || len(res.Shortfalls) != 1 {
		t.Errorf("converge: want no changes and one shortfall, got %+v", res)
	}
	if _, _, dyn := f.state(t, "old-spec"); dyn["leader.replication.throttled.replicas"] != "0:0" {
		t.Errorf("converge: want Kafka's throttle 0:0 kept, got %v", dyn)
	}
}

// TestHungBrokerEachCallUnavailableWithinTimeout: with the broker frozen
// (SIGSTOP: connections open, no answers), concurrent calls, coalesced into
// shared requests, each end as unavailable within about the request
// timeout; once the broker answers again the next calls succeed at once.
func TestHungBrokerEachCallUnavailableWithinTimeout(t *testing.T) {
	f := newFixture(t, kafka.Options{}, func(c *Config) { c.RequestTimeout = drivers.Duration{Duration: time.Second} })
	for i := 0; i < 5; i++ {
		f.ensure(t, fmt.Sprintf("hung.%d", i), map[string]string{"partitions": "2"})
	}
	if err := f.broker.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.broker.Resume(); err != nil {
			t.Error(err)
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, 10)
	took := make([]time.Duration, 10)
	for i := range errs {
		wg.Go(func() {
			// Ended by the driver's request timeout, or by this backstop.
			ctx, cancel := context.WithTimeout(context.Background(), hungBackstop)
			defer cancel()
			start := time.Now()
			name := fmt.Sprintf("hung.%d", i%5)
			if i < 5 {
				_, errs[i] = f.backend.Ensure(ctx, drivers.Resource{Name: name, Parameters: map[string]string{"partitions": "2"}})
			} else {
				_, errs[i] = f.backend.Inspect(ctx, drivers.Resource{Name: name})
			}
			took[i] = time.Since(start)
			if ctx.Err() != nil {
				errs[i] = fmt.Errorf("the test's %s backstop ended the call, not the driver's request timeout: %v", hungBackstop, errs[i])
			}
		})
	}
	wg.Wait()
	t.Logf("calls to the hung broker gave up after %v", took)
	for i, err := range errs {
		if !drivers.IsUnavailable(err) {
			t.Errorf("call %d: want *drivers.UnavailableError, got %T %v", i, err, err)
		}
	}
	if err := f.broker.Resume(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		_, err := f.backend.Ensure(context.Background(), drivers.Resource{Name: "hung.0", Parameters: map[string]string{"partitions": "2"}})
		if err == nil {
			break
		}
		if time.Since(start) > hungBackstop {
			t.Fatalf("after resume: want Ensure to succeed again within the %s backstop, last error %v", hungBackstop, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("first successful Ensure %s after the broker answered again", time.Since(start).Round(time.Millisecond))
}
