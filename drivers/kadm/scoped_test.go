package kadm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// scopedFixture is a broker with SASL/SCRAM and ACLs enforced, and the
// backend as its superuser.
func scopedFixture(t *testing.T, acls bool) *fixture {
	t.Helper()
	return newFixture(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: acls}, func(c *Config) {
		c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
	})
}

// secretClient connects with nothing but a Secret's keys.
func secretClient(t *testing.T, data map[string][]byte, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	if got := string(data[SecretSASLMechanism]); got != "SCRAM-SHA-512" {
		t.Fatalf("want sasl.mechanism SCRAM-SHA-512, got %q", got)
	}
	cl, err := kafka.SecretClient(data, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(cl *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// consume reads one record of topic in group, or returns the error.
func consume(t *testing.T, data map[string][]byte, topic, group string) error {
	cl := secretClient(t, data, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	return kafka.ConsumeOne(ctx, cl)
}

func grantAs(t *testing.T, be *Backend, topic, uid, role string, secret string, assert bool) map[string][]byte {
	t.Helper()
	a := drivers.Access{Resource: topic, Namespace: "team", Name: "app-" + strings.ToLower(role), UID: uid, Role: role}
	a.Principal, a.Secret, a.Assert = be.Principal(a, 1), secret, assert
	g, err := be.Grant(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Scoped || g.Principal != a.Principal {
		t.Fatalf("want a scoped grant for %s, got %+v", a.Principal, g)
	}
	drivertest.CheckGrant(t, secretKeys, g)
	return g.Data
}

// TestScopingNeedsSASLAndAnAuthorizer: a backend scopes only with SASL, no
// shareCredentials, and a cluster that enforces ACLs; otherwise it says why.
func TestScopingNeedsSASLAndAnAuthorizer(t *testing.T) {
	plain := newFixture(t, kafka.Options{}, nil)
	if s, err := plain.backend.Scoping(context.Background()); err != nil || s.Scoped || !strings.Contains(s.Reason, "without SASL") {
		t.Errorf("plaintext: want not scoped, without SASL; got %+v, %v", s, err)
	}
	noAuthz := scopedFixture(t, false)
	if s, err := noAuthz.backend.Scoping(context.Background()); err != nil || s.Scoped || !strings.Contains(s.Reason, "no authorizer") {
		t.Errorf("SASL without ACLs: want not scoped, no authorizer; got %+v, %v", s, err)
	}
	old := newFixture(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, Kafka26: true}, func(c *Config) {
		c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
	})
	if s, err := old.backend.Scoping(context.Background()); err != nil || s.Scoped || !strings.Contains(s.Reason, "no SCRAM admin API") {
		t.Errorf("Kafka 2.6: want not scoped, no SCRAM admin API; got %+v, %v", s, err)
	}
	scoped := scopedFixture(t, true)
	if s, err := scoped.backend.Scoping(context.Background()); err != nil || !s.Scoped {
		t.Errorf("SASL with ACLs: want scoped, got %+v, %v", s, err)
	}
}

// TestScopedRoles: each Secret can do what its role says on its topic, and
// nothing on a neighbour's topic or in a group outside its prefix; a
// revoked user cannot authenticate.
func TestScopedRoles(t *testing.T) {
	f := scopedFixture(t, true)
	f.ensure(t, "orders", nil)
	f.ensure(t, "payroll", nil)
	rw := grantAs(t, f.backend, "orders", "uid-rw", "ReadWrite", "", false)
	ro := grantAs(t, f.backend, "orders", "uid-ro", "ReadOnly", "", false)
	wo := grantAs(t, f.backend, "orders", "uid-wo", "WriteOnly", "", false)

	if err := produce(secretClient(t, rw), "orders"); err != nil {
		t.Fatalf("ReadWrite: want produce allowed, got %v", err)
	}
	if err := produce(secretClient(t, wo), "orders"); err != nil {
		t.Errorf("WriteOnly: want produce allowed, got %v", err)
	}
	// An idempotent producer (the default) is refused its producer id, a
	// plain one the write itself.
	if err := produce(secretClient(t, ro), "orders"); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("ReadOnly: want an idempotent produce refused with CLUSTER_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := produce(secretClient(t, ro, kgo.DisableIdempotentWrite()), "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("ReadOnly: want a produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := consume(t, ro, "orders", string(ro[SecretGroupPrefix])+"reader"); err != nil {
		t.Errorf("ReadOnly: want consume in its group prefix allowed, got %v", err)
	}
	if err := consume(t, ro, "orders", "someone-elses-group"); err == nil {
		t.Error("ReadOnly: want a group outside its prefix refused")
	}
	if err := consume(t, wo, "orders", string(wo[SecretGroupPrefix])+"reader"); err == nil {
		t.Error("WriteOnly: want consume refused")
	}
	if err := produce(secretClient(t, rw), "payroll"); err == nil {
		t.Error("ReadWrite on orders: want produce to the neighbour's payroll refused")
	}
	if err := consume(t, rw, "payroll", string(rw[SecretGroupPrefix])+"x"); err == nil {
		t.Error("ReadWrite on orders: want consume of the neighbour's payroll refused")
	}
	if string(rw[SecretGroupPrefix]) == string(ro[SecretGroupPrefix]) || !strings.HasPrefix(string(rw[SecretGroupPrefix]), "bky.team.") {
		t.Errorf("want distinct bky.<namespace>. group prefixes, got %q and %q", rw[SecretGroupPrefix], ro[SecretGroupPrefix])
	}

	if err := f.backend.Revoke(context.Background(), drivers.Access{Principal: string(rw[SecretSASLUsername])}); err != nil {
		t.Fatal(err)
	}
	if err := produce(secretClient(t, rw), "orders"); err == nil {
		t.Error("want a revoked user refused on a new connection")
	}
	if ok, err := f.backend.InspectPrincipal(context.Background(), string(rw[SecretSASLUsername])); err != nil || ok {
		t.Errorf("want the revoked principal gone, got %v, %v", ok, err)
	}
	acls, err := f.backend.principalACLs(context.Background(), string(rw[SecretSASLUsername]))
	if err != nil || len(acls) != 0 {
		t.Errorf("want the revoked principal's ACLs gone, got %v, %v", acls, err)
	}
	if err := f.backend.Revoke(context.Background(), drivers.Access{Principal: string(rw[SecretSASLUsername])}); err != nil {
		t.Errorf("want revoking a missing principal to succeed, got %v", err)
	}
}

// TestScopedSecretIsTheSourceOfTruth: a Grant with the Secret's password
// and no Assert writes nothing; with Assert it re-asserts that password
// (drifted on the broker) and makes the ACLs exactly the role's.
func TestScopedSecretIsTheSourceOfTruth(t *testing.T) {
	f := scopedFixture(t, true)
	f.ensure(t, "orders", nil)
	first := grantAs(t, f.backend, "orders", "uid-1", "ReadWrite", "", false)
	principal, password := string(first[SecretSASLUsername]), string(first[SecretSASLPassword])
	if len(password) < 32 {
		t.Fatalf("want a long random password, got %d characters", len(password))
	}
	// Drift: the password changed and the role narrowed out of band.
	if err := f.backend.upsertUser(context.Background(), principal, 2, "changed-by-hand"); err != nil {
		t.Fatal(err)
	}
	f.counter.Reset()
	again := grantAs(t, f.backend, "orders", "uid-1", "ReadWrite", password, false)
	if _, all := f.counter.Reset(); string(again[SecretSASLPassword]) != password || all != 0 {
		t.Errorf("without Assert: want the Secret's password kept and no request, got %d requests", all)
	}
	grantAs(t, f.backend, "orders", "uid-1", "ReadWrite", password, true)
	if err := produce(secretClient(t, first), "orders"); err != nil {
		t.Errorf("after Assert: want the Secret's password to work again, got %v", err)
	}
	// ReadOnly now: Write is removed, exactly.
	a := drivers.Access{Resource: "orders", Namespace: "team", Name: "app-readwrite", UID: "uid-1", Role: "ReadOnly", Principal: principal, Secret: password, Assert: true}
	if _, err := f.backend.Grant(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := produce(secretClient(t, first, kgo.DisableIdempotentWrite()), "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("after the role became ReadOnly: want produce refused, got %v", err)
	}
	have, err := f.backend.principalACLs(context.Background(), principal)
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != len(wantACLs(a)) {
		t.Errorf("want exactly the ReadOnly ACLs (%d), got %d: %v", len(wantACLs(a)), len(have), have)
	}
}

// TestSweepCredentials: one pass over the whole cluster finds the
// principals whose user or ACLs drifted, and only those.
func TestSweepCredentials(t *testing.T) {
	f := scopedFixture(t, true)
	f.ensure(t, "orders", nil)
	var as []drivers.Access
	for i, role := range []string{"ReadWrite", "ReadOnly", "WriteOnly", "ReadWrite"} {
		a := drivers.Access{Resource: "orders", Namespace: "team", Name: fmt.Sprintf("app-%d", i), UID: fmt.Sprintf("uid-%d", i), Role: role}
		a.Principal = f.backend.Principal(a, 1)
		if _, err := f.backend.Grant(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	// Out of band: an ACL added for app-0, one removed from app-1, app-2's
	// user deleted; app-3 untouched. A foreign user's ACLs are not judged.
	ctx := context.Background()
	if _, err := f.admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+as[0].Principal).Topics("payroll").Operations(kadm.OpRead)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:"+as[1].Principal).AllowHosts().Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: as[2].Principal, Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:someone").Topics("orders").Operations(kadm.OpRead)); err != nil {
		t.Fatal(err)
	}
	f.counter.Reset()
	got, err := f.backend.SweepCredentials(ctx, as)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("want accesses 0, 1 and 2 drifted, got %v", got)
	}
	if writes, all := f.counter.Reset(); len(writes) != 0 || all != 2 {
		t.Errorf("want two reads for the whole cluster, got %d requests, writes %v", all, writes)
	}
	// Re-asserting repairs them.
	for _, i := range got {
		a := as[i]
		a.Assert, a.Secret = true, "the-secret"
		if _, err := f.backend.Grant(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.backend.SweepCredentials(ctx, as); err != nil || len(got) != 0 {
		t.Errorf("after re-asserting: want no drift, got %v (%v)", got, err)
	}
}

// TestScopedGrantsAreBatched: many accesses granted and revoked at once
// meet in a few requests per kind (users, ACLs), as topic creates do: far
// fewer than one request per access, and every access still gets exactly
// its own user and ACLs.
func TestScopedGrantsAreBatched(t *testing.T) {
	const n = 40
	f := scopedFixture(t, true)
	ctx := context.Background()
	as := make([]drivers.Access, n)
	for i := range as {
		topic := fmt.Sprintf("batched-%02d", i)
		f.ensure(t, topic, nil)
		as[i] = drivers.Access{Resource: topic, Namespace: "team", Name: fmt.Sprintf("app-%02d", i), UID: fmt.Sprintf("uid-batched-%02d", i), Role: "ReadOnly", Assert: true}
		as[i].Principal = f.backend.Principal(as[i], 1)
	}
	f.counter.Reset()
	grants := make([]drivers.Grant, n)
	errs := make(chan error, n)
	for i := range as {
		go func() {
			if exists, err := f.backend.InspectPrincipal(ctx, as[i].Principal); err != nil || exists {
				errs <- fmt.Errorf("inspect %s: exists=%v err=%v", as[i].Principal, exists, err)
				return
			}
			g, err := f.backend.Grant(ctx, as[i])
			grants[i] = g
			errs <- err
		}()
	}
	for range as {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ops := f.counter.Ops()
	credOps := []string{"DescribeUserSCRAMCredentials", "AlterUserSCRAMCredentials", "DescribeACLs", "CreateACLs", "DeleteACLs"}
	total := 0
	for _, op := range credOps {
		total += ops[op]
	}
	t.Logf("granting %d accesses at once: %v", n, ops)
	if total > n/4 {
		t.Errorf("granting %d accesses: want the user and ACL requests batched (at most %d), got %d: %v", n, n/4, total, ops)
	}
	for i, g := range grants {
		have, err := f.backend.principalACLs(ctx, as[i].Principal)
		if err != nil {
			t.Fatal(err)
		}
		if !sameACLs(have, wantACLs(as[i])) {
			t.Errorf("%s: want exactly its role's ACLs %v, got %v", as[i].Principal, wantACLs(as[i]), have)
		}
		if i%10 == 0 {
			cl := secretClient(t, g.Data, kgo.DisableIdempotentWrite())
			if err := produce(cl, as[i].Resource); !errors.Is(err, kerr.TopicAuthorizationFailed) {
				t.Errorf("%s (ReadOnly) produce: want TOPIC_AUTHORIZATION_FAILED, got %v", as[i].Principal, err)
			}
		}
	}

	f.counter.Reset()
	for i := range as {
		go func() { errs <- f.backend.Revoke(ctx, as[i]) }()
	}
	for range as {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ops, total = f.counter.Ops(), 0
	for _, op := range credOps {
		total += ops[op]
	}
	t.Logf("revoking %d accesses at once: %v", n, ops)
	if total > n/4 {
		t.Errorf("revoking %d accesses: want the user and ACL requests batched (at most %d), got %d: %v", n, n/4, total, ops)
	}
	users, err := f.admin.DescribeUserSCRAMs(ctx)
	if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		t.Fatal(err)
	}
	acls, err := f.backend.listACLs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if _, ok := users[a.Principal]; ok {
			t.Errorf("%s: still a SCRAM user after Revoke", a.Principal)
		}
		if len(acls[a.Principal]) > 0 {
			t.Errorf("%s: ACLs left after Revoke: %v", a.Principal, acls[a.Principal])
		}
	}
}
