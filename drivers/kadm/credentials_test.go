package kadm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/apimachinery/pkg/util/validation"

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
	a := drivers.Access{Resource: topic, Namespace: "team", Name: "app-" + strings.ToLower(role), UID: uid, Role: drivers.Role(role)}
	a.Principal, a.Secret = be.Principal(a, 1), secret
	if assert {
		a.Assert = drivers.Reassert
	}
	g, err := be.Grant(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if !g.PerAccess || g.Principal != a.Principal {
		t.Fatalf("want a scoped grant for %s, got %+v", a.Principal, g)
	}
	drivertest.CheckGrant(t, secretKeys, g)
	return g.Data
}

// TestScopingNeedsSASLAndAnAuthorizer: a backend scopes only with SASL, no
// shareCredentials, and a cluster that enforces ACLs; otherwise it says why.
func TestScopingNeedsSASLAndAnAuthorizer(t *testing.T) {
	plain := newFixture(t, kafka.Options{}, nil)
	if s, err := plain.backend.Issuing(context.Background()); err != nil || s.PerAccess || !strings.Contains(s.Reason, "without SASL") {
		t.Errorf("plaintext: want not scoped, without SASL; got %+v, %v", s, err)
	}
	noAuthz := scopedFixture(t, false)
	if s, err := noAuthz.backend.Issuing(context.Background()); err != nil || s.PerAccess || !strings.Contains(s.Reason, "no authorizer") {
		t.Errorf("SASL without ACLs: want not scoped, no authorizer; got %+v, %v", s, err)
	}
	old := newFixture(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, Kafka26: true}, func(c *Config) {
		c.SASL = &SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}
	})
	if s, err := old.backend.Issuing(context.Background()); err != nil || s.PerAccess || !strings.Contains(s.Reason, "no SCRAM admin API") {
		t.Errorf("Kafka 2.6: want not scoped, no SCRAM admin API; got %+v, %v", s, err)
	}
	scoped := scopedFixture(t, true)
	if s, err := scoped.backend.Issuing(context.Background()); err != nil || !s.PerAccess {
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
	if err := f.backend.upsertUser(context.Background(), principal, 2, "changed-by-hand", false); err != nil {
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
	a := drivers.Access{Resource: "orders", Namespace: "team", Name: "app-readwrite", UID: "uid-1", Role: "ReadOnly", Principal: principal, Secret: password, Assert: drivers.Reassert}
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
		a := drivers.Access{Resource: "orders", Namespace: "team", Name: fmt.Sprintf("app-%d", i), UID: fmt.Sprintf("uid-%d", i), Role: drivers.Role(role)}
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
	if writes, all := f.counter.Reset(); len(writes) != 0 || all != 3 {
		t.Errorf("want three reads for the whole cluster (users, ACLs, quotas), got %d requests, writes %v", all, writes)
	}
	// Re-asserting repairs them.
	for _, i := range got {
		a := as[i]
		a.Assert, a.Secret = drivers.Reassert, "the-secret"
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
		as[i] = drivers.Access{Resource: topic, Namespace: "team", Name: fmt.Sprintf("app-%02d", i), UID: fmt.Sprintf("uid-batched-%02d", i), Role: "ReadOnly", Assert: drivers.Reassert,
			Parameters: map[string]string{AccessConsumerByteRate: fmt.Sprint(1024 * (i + 1))}}
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
	credOps := []string{"DescribeUserSCRAMCredentials", "AlterUserSCRAMCredentials", "DescribeACLs", "CreateACLs", "DeleteACLs", "DescribeClientQuotas", "AlterClientQuotas"}
	total := 0
	for _, op := range credOps {
		total += ops[op]
	}
	t.Logf("granting %d accesses at once: %v", n, ops)
	// Unbatched, each grant is at least 4 of these requests (160 for 40).
	// A loaded machine splits the batching windows (11 in a CI run with a
	// load average of 25, against 6-9 idle): the bound proves batching,
	// not the idle figure.
	if total > n/2 {
		t.Errorf("granting %d accesses: want the user and ACL requests batched (at most %d), got %d: %v", n, n/2, total, ops)
	}
	for i, g := range grants {
		have, err := f.backend.principalACLs(ctx, as[i].Principal)
		if err != nil {
			t.Fatal(err)
		}
		if !sameACLs(have, wantACLs(as[i])) {
			t.Errorf("%s: want exactly its role's ACLs %v, got %v", as[i].Principal, wantACLs(as[i]), have)
		}
		if q := quotasOf(t, f, as[i].Principal); q["consumer_byte_rate"] != float64(1024*(i+1)) || len(q) != 1 {
			t.Errorf("%s: want its own consumer_byte_rate %d, got %v", as[i].Principal, 1024*(i+1), q)
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
	// As for grants: the bound proves batching on a loaded machine too.
	if total > n/2 {
		t.Errorf("revoking %d accesses: want the user and ACL requests batched (at most %d), got %d: %v", n, n/2, total, ops)
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
		if q := quotasOf(t, f, a.Principal); len(q) > 0 {
			t.Errorf("%s: quotas left after Revoke: %v", a.Principal, q)
		}
	}
}

// hashOf is the 12 hex digits of a UID's SHA-256 that name an access.
func hashOf(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return hex.EncodeToString(sum[:6])
}

// kafkaName is the character set Kafka and its tools accept in topic
// names, which every group and transactional id buckety hands out keeps to.
var kafkaName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// nests reports a pair of distinct accesses one of whose group prefixes
// starts the other's: the PREFIXED ACLs of the first would then cover the
// second's groups and transactional ids.
func nests(a, b drivers.Access) bool {
	if a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID {
		return false // one access: a changed consumerGroupPrefix replaces its ACLs
	}
	pa, pb := groupPrefix(a), groupPrefix(b)
	return strings.HasPrefix(pa, pb) || strings.HasPrefix(pb, pa)
}

// TestGroupPrefixesDoNotNest: whatever names tenants pick (an access name
// is a DNS subdomain, so it may spell out another access's name and hash
// with dots and dashes) and whatever consumerGroupPrefix they set, no
// access's group prefix starts another's, and each is a legal group and
// transactional id.
func TestGroupPrefixesDoNotNest(t *testing.T) {
	hb := hashOf("uid-b")
	long := strings.Repeat("a", 253) // a DNS subdomain's longest
	names := []string{"b", "b." + hb, "b." + hb + ".x", "b." + hb + "-x", "b." + hb + ".1", "b-" + hb, "b.c", "b-c", "bc",
		"b.c.d", "c", "x.b", long, long[:240] + "." + hb, long[:200] + "." + hb + ".x"}
	namespaces := []string{"a", "a-b", "ab", "b", strings.Repeat("n", 63)}
	params := []string{"", "x", ".", "-", "_", "x_", "_x", hb, "." + hb + ".x", "-" + hb, "reporting-", strings.Repeat("p", 249)}
	var as []drivers.Access
	for _, ns := range namespaces {
		for _, name := range names {
			// Two UIDs per name: an access deleted and created again.
			for _, uid := range []string{"uid-" + name, "uid-" + name + "-again"} {
				for _, p := range params {
					a := drivers.Access{Namespace: ns, Name: name, UID: uid}
					if p != "" {
						a.Parameters = map[string]string{AccessConsumerGroupPrefix: p}
					}
					as = append(as, a)
				}
			}
		}
	}
	for _, a := range as {
		if p := groupPrefix(a); !kafkaName.MatchString(p) {
			t.Fatalf("%s/%s: want a group prefix of [a-zA-Z0-9._-], got %q", a.Namespace, a.Name, p)
		}
	}
	// Sorted, the prefixes a prefix starts follow it at once.
	slices.SortFunc(as, func(a, b drivers.Access) int { return strings.Compare(groupPrefix(a), groupPrefix(b)) })
	for i, a := range as {
		for _, b := range as[i+1:] {
			if !strings.HasPrefix(groupPrefix(b), groupPrefix(a)) {
				break
			}
			if nests(a, b) {
				t.Fatalf("want no access's group prefix to start another's, got %q (%s/%s uid %s) and %q (%s/%s uid %s)",
					groupPrefix(a), a.Namespace, a.Name, a.UID, groupPrefix(b), b.Namespace, b.Name, b.UID)
			}
		}
	}
}

// FuzzGroupPrefixesDoNotNest: TestGroupPrefixesDoNotNest for any two
// accesses Kubernetes would accept (namespace a DNS label, name a DNS
// subdomain) with any consumerGroupPrefix admission accepts.
func FuzzGroupPrefixesDoNotNest(f *testing.F) {
	hb := hashOf("uid-b")
	f.Add("a", "b", "uid-b", "", "a", "b."+hb+".x", "uid-x", "")
	f.Add("a", "b", "uid-b", "", "a", "b", "uid-b2", "")
	f.Add("a", "b", "uid-b", "x", "a", "b."+hb+".x", "uid-x", "")
	f.Add("a", "b", "uid-b", "", "a", "b."+hb, "uid-x", "x")
	f.Fuzz(func(t *testing.T, ns1, name1, uid1, p1, ns2, name2, uid2, p2 string) {
		var as []drivers.Access
		for _, x := range [][4]string{{ns1, name1, uid1, p1}, {ns2, name2, uid2, p2}} {
			if len(validation.IsDNS1123Label(x[0])) > 0 || len(validation.IsDNS1123Subdomain(x[1])) > 0 || x[2] == "" {
				return
			}
			a := drivers.Access{Namespace: x[0], Name: x[1], UID: x[2]}
			if x[3] != "" {
				if !validGroupPrefix(x[3]) {
					return
				}
				a.Parameters = map[string]string{AccessConsumerGroupPrefix: x[3]}
			}
			if !kafkaName.MatchString(groupPrefix(a)) {
				t.Fatalf("want a group prefix of [a-zA-Z0-9._-], got %q", groupPrefix(a))
			}
			as = append(as, a)
		}
		if nests(as[0], as[1]) {
			t.Fatalf("want neither group prefix to start the other, got %q and %q", groupPrefix(as[0]), groupPrefix(as[1]))
		}
	})
}

// grantNamed grants an access of namespace team its per-access credential.
func grantNamed(t *testing.T, be *Backend, a drivers.Access) map[string][]byte {
	t.Helper()
	a.Namespace, a.Principal = "team", be.Principal(a, 1)
	g, err := be.Grant(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if !g.PerAccess {
		t.Fatalf("want a scoped grant for %s, got %+v", a.Principal, g)
	}
	return g.Data
}

// transact produces one record of topic in a transaction with id txn.
func transact(t *testing.T, data map[string][]byte, topic, txn string) error {
	cl := secretClient(t, data, kgo.TransactionalID(txn), kgo.RequestRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr(); err != nil {
		return err
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// TestScopedGroupPrefixesDoNotNest: access b's credential is refused the
// groups and transactional ids of an access its tenant named
// b.<b's hash>.x, which sit under what b's prefix would be if it ended in
// a character access names may hold.
func TestScopedGroupPrefixesDoNotNest(t *testing.T) {
	f := scopedFixture(t, true)
	f.ensure(t, "orders", nil)
	b := grantNamed(t, f.backend, drivers.Access{Resource: "orders", Name: "b", UID: "uid-b", Role: "ReadWrite"})
	x := grantNamed(t, f.backend, drivers.Access{Resource: "orders", Name: "b." + hashOf("uid-b") + ".x", UID: "uid-x", Role: "ReadWrite"})
	bp, xp := string(b[SecretGroupPrefix]), string(x[SecretGroupPrefix])
	if strings.HasPrefix(xp, bp) {
		t.Errorf("want b's group prefix %q not to start b.<hash>.x's %q", bp, xp)
	}
	if err := produce(secretClient(t, b), "orders"); err != nil {
		t.Fatalf("b: want produce allowed, got %v", err)
	}
	if err := consume(t, x, "orders", xp+"reader"); err != nil {
		t.Errorf("b.<hash>.x: want consume in its own group allowed, got %v", err)
	}
	if err := consume(t, b, "orders", xp+"taken"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("b: want consume in b.<hash>.x's group %s refused with GROUP_AUTHORIZATION_FAILED, got %v", xp+"taken", err)
	}
	if err := consume(t, b, "orders", bp+"reader"); err != nil {
		t.Errorf("b: want consume in its own group allowed, got %v", err)
	}
	if err := transact(t, x, "orders", xp+"tx"); err != nil {
		t.Errorf("b.<hash>.x: want a transaction under its own prefix allowed, got %v", err)
	}
	if err := transact(t, b, "orders", xp+"tx"); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Errorf("b: want transactional id %s refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, got %v", xp+"tx", err)
	}
}

// TestOldGroupPrefixIsDrift: an access granted before group prefixes
// ended in '_' (ACLs on bky.<namespace>.<access>.<hash>.) is drift to the
// credential sweep; re-asserting it removes the old prefix's ACLs, creates
// the new ones, and its Secret carries the new prefix.
func TestOldGroupPrefixIsDrift(t *testing.T) {
	f := scopedFixture(t, true)
	ctx := context.Background()
	f.ensure(t, "orders", nil)
	a := drivers.Access{Resource: "orders", Namespace: "team", Name: "legacy", UID: "uid-legacy", Role: "ReadWrite",
		Parameters: map[string]string{AccessConsumerGroupPrefix: "reporting-"}}
	a.Principal = f.backend.Principal(a, 1)
	g, err := f.backend.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	// The ACLs as the previous shape made them.
	old := accessBase(a) + ".reporting-"
	if _, err := f.admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:"+a.Principal).AllowHosts().
		Groups(groupPrefix(a)).TransactionalIDs(groupPrefix(a)).Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+a.Principal).AllowHosts().
		Groups(old).Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+a.Principal).AllowHosts().
		TransactionalIDs(old).Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternPrefixed)); err != nil {
		t.Fatal(err)
	}
	if err := produce(secretClient(t, g.Data), "orders"); err != nil {
		t.Fatal(err)
	}
	if err := consume(t, g.Data, "orders", old+"before"); err != nil {
		t.Fatalf("before the sweep: want the old prefix's group allowed, got %v", err)
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || fmt.Sprint(got) != "[0]" {
		t.Fatalf("want the old prefix's ACLs drift, got %v (%v)", got, err)
	}
	a.Assert, a.Secret = drivers.Reassert, string(g.Data[SecretSASLPassword])
	g, err = f.backend.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(g.Data[SecretGroupPrefix]), groupPrefix(a); got != want || got == old {
		t.Errorf("want the Secret's group.id.prefix %q (not %q), got %q", want, old, got)
	}
	have, err := f.backend.principalACLs(ctx, a.Principal)
	if err != nil {
		t.Fatal(err)
	}
	if !sameACLs(have, wantACLs(a)) {
		t.Errorf("after re-asserting: want exactly %v, got %v", wantACLs(a), have)
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(got) != 0 {
		t.Errorf("after re-asserting: want no drift, got %v (%v)", got, err)
	}
	if err := consume(t, g.Data, "orders", old+"after"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("after re-asserting: want the old prefix's group refused with GROUP_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := consume(t, g.Data, "orders", string(g.Data[SecretGroupPrefix])+"reader"); err != nil {
		t.Errorf("after re-asserting: want a group under the Secret's prefix allowed, got %v", err)
	}
}

// operatorACLs reads every ACL of principal with the out-of-band client,
// DENY ones included, as "PERMISSION OPERATION TYPE PATTERN NAME HOST".
func operatorACLs(t *testing.T, f *fixture, principal string) map[string]bool {
	t.Helper()
	got, err := f.admin.DescribeACLs(context.Background(), kadm.NewACLs().Allow("User:"+principal).Deny("User:"+principal).
		AllowHosts().DenyHosts().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range got {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		for _, d := range r.Described {
			out[fmt.Sprintf("%s %s %s %s %s %s", d.Permission, d.Operation, d.Type, d.Pattern, d.Name, d.Host)] = true
		}
	}
	return out
}

// TestOperatorDenyACLsAreKept: DENY ACLs an operator puts on a buckety
// principal are the operator's: never drift, never deleted (by a
// re-assert or a revocation), and the ALLOW ACL they shadow is kept too;
// ALLOW ACLs beyond the role's are still drift and removed, exactly.
func TestOperatorDenyACLsAreKept(t *testing.T) {
	f := scopedFixture(t, true)
	ctx := context.Background()
	f.ensure(t, "orders", nil)
	f.ensure(t, "payroll", nil)
	a := drivers.Access{Resource: "orders", Namespace: "team", Name: "app", UID: "uid-app", Role: "ReadWrite"}
	a.Principal = f.backend.Principal(a, 1)
	g, err := f.backend.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := produce(secretClient(t, g.Data), "orders"); err != nil {
		t.Fatal(err)
	}
	user := "User:" + a.Principal
	denyRead := "DENY READ TOPIC LITERAL orders *"
	denyHost := "DENY WRITE TOPIC LITERAL orders 10.0.0.1"
	allowRead := "ALLOW READ TOPIC LITERAL orders *"
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Deny(user).DenyHosts().Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Deny(user).DenyHosts("10.0.0.1").Topics("orders").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
	} {
		if _, err := f.admin.CreateACLs(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(got) != 0 {
		t.Errorf("with the operator's DENY ACLs: want no drift, got %v (%v)", got, err)
	}
	// Re-asserted (a spec change, an edited Secret): the DENY ACLs stay.
	a.Assert, a.Secret = drivers.Reassert, string(g.Data[SecretSASLPassword])
	if _, err := f.backend.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	have := operatorACLs(t, f, a.Principal)
	for _, want := range []string{denyRead, denyHost, allowRead} {
		if !have[want] {
			t.Errorf("after re-asserting: want %q kept, got %v", want, have)
		}
	}
	if err := consume(t, g.Data, "orders", string(g.Data[SecretGroupPrefix])+"denied"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("after re-asserting: want reading refused by the operator's DENY with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := produce(secretClient(t, g.Data), "orders"); err != nil {
		t.Errorf("after re-asserting: want produce (not denied) allowed, got %v", err)
	}

	// An ALLOW beyond the role's, and a host-restricted ALLOW of one of the
	// role's operations, are drift: re-asserting deletes them and nothing
	// else.
	for _, b := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow(user).AllowHosts().Topics("payroll").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow(user).AllowHosts("10.0.0.1").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	} {
		if _, err := f.admin.CreateACLs(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || fmt.Sprint(got) != "[0]" {
		t.Errorf("with extra ALLOW ACLs: want drift, got %v (%v)", got, err)
	}
	if _, err := f.backend.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	have = operatorACLs(t, f, a.Principal)
	for _, gone := range []string{"ALLOW READ TOPIC LITERAL payroll *", "ALLOW READ TOPIC LITERAL orders 10.0.0.1"} {
		if have[gone] {
			t.Errorf("after re-asserting: want %q deleted, got %v", gone, have)
		}
	}
	for _, want := range []string{denyRead, denyHost, allowRead} {
		if !have[want] {
			t.Errorf("after re-asserting the extras away: want %q kept, got %v", want, have)
		}
	}
	if len(have) != len(wantACLs(a))+2 {
		t.Errorf("want the role's %d ACLs and the operator's 2 DENY ACLs, got %v", len(wantACLs(a)), have)
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(got) != 0 {
		t.Errorf("after re-asserting: want no drift, got %v (%v)", got, err)
	}

	// Revoked: buckety's ALLOW ACLs go with the user, the operator's DENY
	// ACLs stay until the operator removes them.
	if err := f.backend.Revoke(ctx, a); err != nil {
		t.Fatal(err)
	}
	have = operatorACLs(t, f, a.Principal)
	if len(have) != 2 || !have[denyRead] || !have[denyHost] {
		t.Errorf("after revoking: want only the operator's DENY ACLs, got %v", have)
	}
}
