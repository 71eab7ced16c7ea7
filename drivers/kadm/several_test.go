package kadm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

// One access, several topics (drivers.SeveralGranter): one user with the
// role's rights on every topic, and the Secret's several-resource shape.

// severalAccess is an access of team/name over topics, each keyed by
// its own name, with its principal.
func severalAccess(be *Backend, name, uid string, role drivers.Role, topics ...string) drivers.Access {
	a := drivers.Access{Resource: topics[0], Namespace: "team", Name: name, UID: uid, Role: role}
	for _, topic := range topics {
		a.Several = append(a.Several, drivers.AccessResource{Key: "b-" + topic, Name: topic})
	}
	a.Principal = be.Principal(a, 1)
	return a
}

// grantSeveral grants a and checks the Secret's several-resource shape:
// topics lists the topics in order, topic.<key> names each, and there is
// no topic key.
func grantSeveral(t *testing.T, be *Backend, a drivers.Access) map[string][]byte {
	t.Helper()
	g, err := be.Grant(context.Background(), a)
	if err != nil {
		t.Fatalf("Grant(%s over %v): %v", a.Name, a.Resources(), err)
	}
	drivertest.CheckGrant(t, drivers.AllSecretKeys(New()), g)
	checkSeveralShape(t, a, g.Data)
	return g.Data
}

// checkSeveralShape checks the several-resource keys of a Secret of a.
func checkSeveralShape(t *testing.T, a drivers.Access, data map[string][]byte) {
	t.Helper()
	if got, want := string(data[SecretTopics]), strings.Join(a.Resources(), ","); got != want {
		t.Errorf("want topics %q, got %q", want, got)
	}
	if v, ok := data[SecretTopic]; ok {
		t.Errorf("want no topic key in the Secret of an access naming several, got %q", v)
	}
	n := 0
	for k := range data {
		if strings.HasPrefix(k, SecretTopic+".") {
			n++
		}
	}
	for _, r := range a.Several {
		if got := string(data[drivers.SeveralKey(SecretTopic, r.Key)]); got != r.Name {
			t.Errorf("want %s = %s, got %q", drivers.SeveralKey(SecretTopic, r.Key), r.Name, got)
		}
	}
	if n != len(a.Several) {
		t.Errorf("want %d topic.<key> keys, got %d: %v", len(a.Several), n, slices.Sorted(maps.Keys(data)))
	}
}

// TestGrantSeveralShape: without a user of the access's own (no SASL, or
// credentials.mode Shared), Grant with Several returns the several-resource
// shape with the backend's connection and shared credentials, and each
// format's comment line names the topics.
func TestGrantSeveralShape(t *testing.T) {
	sasl := &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
	for _, cfg := range []*Config{
		{SeedBrokers: []string{"k0:9092"}},
		{SeedBrokers: []string{"k0:9092"}, SASL: sasl, Credentials: &Credentials{Mode: drivers.Shared}},
	} {
		b := &Backend{name: "kafka", cfg: cfg}
		a := severalAccess(b, "app", "uid", drivers.RoleReadWrite, "orders", "payments", "refunds")
		a.Principal, a.SecretFormats = "", []string{FormatJava, FormatLibrdkafka}
		data := grantSeveral(t, b, a)
		if string(data[SecretBootstrap]) != "k0:9092" {
			t.Errorf("want bootstrap k0:9092, got %q", data[SecretBootstrap])
		}
		if cfg.SASL != nil && (string(data[SecretSASLUsername]) != "buckety" || string(data[SecretSASLPassword]) != "s3cr3t") {
			t.Errorf("credentials.mode Shared: want the backend's own user, got %q", data[SecretSASLUsername])
		}
		for _, key := range []string{SecretClientProperties, SecretLibrdkafkaConfig} {
			conf := string(data[key])
			if !strings.Contains(conf, "\n# topics: orders,payments,refunds\n") || strings.Contains(conf, "# topic:") {
				t.Errorf("%s: want the comment line # topics: orders,payments,refunds and no # topic:, got\n%s", key, conf)
			}
		}
		one := drivers.Access{Resource: "orders", SecretFormats: a.SecretFormats}
		g, err := b.Grant(context.Background(), one)
		if err != nil {
			t.Fatal(err)
		}
		if conf := string(g.Data[SecretClientProperties]); !strings.Contains(conf, "\n# topic: orders\n") || strings.Contains(conf, "# topics:") {
			t.Errorf("one topic: want the comment line # topic: orders, got\n%s", conf)
		}
	}
}

// TestGrantSeveralRefusesBadInput: a grant over several topics names the
// one that is wrong, and writes nothing.
func TestGrantSeveralRefusesBadInput(t *testing.T) {
	b := &Backend{name: "kafka", cfg: &Config{SeedBrokers: []string{"k0:9092"}}}
	base := severalAccess(b, "app", "uid", drivers.RoleReadWrite, "orders", "payments")
	base.Principal = ""
	for _, tc := range []struct {
		name   string
		mutate func(a *drivers.Access)
		want   string
	}{
		{"no topic", func(a *drivers.Access) { a.Several[1].Name = "" }, `grant for team/app: several[1] (key "b-payments"): no topic`},
		{"no key", func(a *drivers.Access) { a.Several[1].Key = "" }, `grant for team/app: several[1] (topic payments): key "" does not make a Secret key`},
		{"a key no Secret key can hold", func(a *drivers.Access) { a.Several[1].Key = "a/b" }, `grant for team/app: several[1] (topic payments): key "a/b" does not make a Secret key (topic.a/b)`},
		{"a key twice", func(a *drivers.Access) { a.Several[1].Key = a.Several[0].Key }, `grant for team/app: several[1] (topic payments): key "b-orders" named twice`},
		{"a topic twice", func(a *drivers.Access) { a.Several[1].Name = "orders" }, "grant for team/app: topic orders named twice"},
		{"granted and dropped", func(a *drivers.Access) { a.Drop = []string{"refunds", "payments"} }, "grant for team/app: topic payments is both granted and dropped"},
		{"the owner registry", func(a *drivers.Access) { a.Several[1].Name = DefaultOwnerRegistryTopic }, DefaultOwnerRegistryTopic + " is buckety's owner registry"},
	} {
		a := base
		a.Several = slices.Clone(base.Several)
		tc.mutate(&a)
		_, err := b.Grant(context.Background(), a)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "backend kafka") {
			t.Errorf("%s: want an error naming backend kafka and containing %q, got %v", tc.name, tc.want, err)
		}
	}
}

// severalTopics are the topics of the TestScopedSeveral tests: an access
// names the first five, and the sixth is a neighbour's.
var severalTopics = []string{"s0", "s1", "s2", "s3", "s4", "s5"}

// TestScopedSeveralReadWrite: one ReadWrite access over five topics
// produces and consumes on every one with its one user and group prefix,
// and can do nothing on a sixth; its ACLs are exactly the role's on the
// five and its prefix's once.
func TestScopedSeveralReadWrite(t *testing.T) {
	f := scopedFixture(t, true)
	for _, topic := range severalTopics {
		f.ensure(t, topic, nil)
	}
	a := severalAccess(f.backend, "five", "uid-five", drivers.RoleReadWrite, severalTopics[:5]...)
	a.Assert = drivers.IssueNew
	data := grantSeveral(t, f.backend, a)
	cl := secretClient(t, data)
	group := string(data[SecretGroupPrefix])
	for _, topic := range severalTopics[:5] {
		if err := produce(cl, topic); err != nil {
			t.Errorf("%s: want produce allowed, got %v", topic, err)
		}
		if err := consume(t, data, topic, group+topic); err != nil {
			t.Errorf("%s: want consume in its group prefix allowed, got %v", topic, err)
		}
	}
	if err := produce(secretClient(t, data), "s5"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("the neighbour's s5: want produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := consume(t, data, "s5", group+"s5"); err == nil {
		t.Error("the neighbour's s5: want consume refused")
	}
	have, err := f.backend.principalACLs(context.Background(), a.Principal)
	if err != nil {
		t.Fatal(err)
	}
	// 3 per topic, and the prefix's 4 (group Read, Describe; transactional
	// id Write, Describe) once.
	if want := wantACLs(a); len(want) != 5*3+4 || !sameACLs(have, want) {
		t.Errorf("want exactly %d ACLs (%v), got %v", 5*3+4, want, have)
	}
}

// TestScopedSeveralReadOnly: a ReadOnly access over three topics reads
// every one and writes none.
func TestScopedSeveralReadOnly(t *testing.T) {
	f := scopedFixture(t, true)
	for _, topic := range severalTopics[:3] {
		f.ensure(t, topic, nil)
		if err := produce(f.kgo, topic); err != nil {
			t.Fatal(err)
		}
	}
	a := severalAccess(f.backend, "three", "uid-three", drivers.RoleReadOnly, severalTopics[:3]...)
	data := grantSeveral(t, f.backend, a)
	for _, topic := range severalTopics[:3] {
		if err := produce(secretClient(t, data, kgo.DisableIdempotentWrite()), topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s: want produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", topic, err)
		}
		if err := consume(t, data, topic, string(data[SecretGroupPrefix])+topic); err != nil {
			t.Errorf("%s: want consume allowed, got %v", topic, err)
		}
	}
}

// TestScopedSeveralDropAndRevoke: a grant with one topic dropped takes
// the user's rights there away and keeps the others (and removes an ACL
// made out of band); the credential sweep sees the access as granted and
// a deleted ACL as drift; Revoke removes every right and the user.
func TestScopedSeveralDropAndRevoke(t *testing.T) {
	f := scopedFixture(t, true)
	ctx := context.Background()
	for _, topic := range severalTopics {
		f.ensure(t, topic, nil)
	}
	a := severalAccess(f.backend, "drop", "uid-drop", drivers.RoleReadWrite, severalTopics[:5]...)
	data := grantSeveral(t, f.backend, a)
	if _, err := f.admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+a.Principal).Topics("s5").Operations(kadm.OpWrite)); err != nil {
		t.Fatal(err)
	}
	// s4 stops being shared with the access. The Drop is honoured even on
	// a grant that would otherwise trust the principal.
	kept := severalAccess(f.backend, "drop", "uid-drop", drivers.RoleReadWrite, severalTopics[:4]...)
	kept.Secret, kept.Drop = string(data[SecretSASLPassword]), []string{"s4"}
	after := grantSeveral(t, f.backend, kept)
	if string(after[SecretSASLPassword]) != kept.Secret {
		t.Fatalf("want the password kept across a Drop")
	}
	cl := secretClient(t, after)
	for _, topic := range severalTopics[:4] {
		if err := produce(cl, topic); err != nil {
			t.Errorf("%s (kept): want produce allowed, got %v", topic, err)
		}
	}
	for _, topic := range []string{"s4", "s5"} {
		if err := produce(secretClient(t, after), topic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Errorf("%s (dropped, or out of band): want produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", topic, err)
		}
	}
	checkSeveralSweep(t, f, kept)
	kept.Drop = nil
	if err := f.backend.Revoke(ctx, kept); err != nil {
		t.Fatal(err)
	}
	for _, topic := range severalTopics[:4] {
		if err := produce(secretClient(t, after), topic); err == nil {
			t.Errorf("%s: want the revoked user refused", topic)
		}
	}
	if acls, err := f.backend.principalACLs(ctx, kept.Principal); err != nil || len(acls) != 0 {
		t.Errorf("want the revoked principal's ACLs gone, got %v, %v", acls, err)
	}
	if ok, err := f.backend.InspectPrincipal(ctx, kept.Principal); err != nil || ok {
		t.Errorf("want the revoked principal gone, got %v, %v", ok, err)
	}
}

// checkSeveralSweep: the sweep finds a's ACLs on every topic as granted,
// and one of them deleted out of band as drift, which a re-assert repairs.
func checkSeveralSweep(t *testing.T, f *fixture, a drivers.Access) {
	t.Helper()
	ctx := context.Background()
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(got) != 0 {
		t.Errorf("sweep after the grant: want no drift, got %v, %v", got, err)
	}
	del := kadm.NewACLs().Allow("User:" + a.Principal).AllowHosts().Topics("s2").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := f.admin.DeleteACLs(ctx, del); err != nil {
		t.Fatal(err)
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || fmt.Sprint(got) != "[0]" {
		t.Errorf("sweep after s2's Read ACL was deleted: want the access drifted, got %v, %v", got, err)
	}
	a.Assert = drivers.Reassert
	grantSeveral(t, f.backend, a)
	have, err := f.backend.principalACLs(ctx, a.Principal)
	if err != nil || !sameACLs(have, wantACLs(a)) {
		t.Errorf("after re-asserting: want exactly %v, got %v, %v", wantACLs(a), have, err)
	}
}
