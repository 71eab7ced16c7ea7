package access

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/backends/backendstest"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestUnaccountedSince: a principal is due once it has been unaccounted
// for its grace, counted from the first listing that found it so; one
// that a listing no longer finds unaccounted (recorded, or gone) starts
// over; backends are kept apart.
func TestUnaccountedSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	grace := 5 * time.Minute
	var u unaccountedSince
	due := func(backend string, at time.Duration, ps ...string) []string {
		var out []string
		for _, d := range u.observe(backend, ps, t0.Add(at), grace) {
			out = append(out, d.principal)
		}
		return out
	}
	steps := []struct {
		name    string
		backend string
		at      time.Duration
		listed  []string
		want    []string
	}{
		{"first seen", "k", 0, []string{"a", "b"}, nil},
		{"other backend, first seen", "s", time.Minute, []string{"a"}, nil},
		{"within grace", "k", grace - time.Nanosecond, []string{"a", "b"}, nil},
		{"b accounted for meanwhile", "k", grace - time.Nanosecond, []string{"a"}, nil},
		{"a past grace; b unaccounted again starts over", "k", grace, []string{"a", "b"}, []string{"a"}},
		{"other backend's a counts from its own first sight", "s", grace, []string{"a"}, nil},
		{"other backend's a past grace", "s", grace + time.Minute, []string{"a"}, []string{"a"}},
		{"b past its new grace", "k", 2 * grace, []string{"a", "b"}, []string{"a", "b"}},
		{"nothing listed forgets all", "k", 2 * grace, nil, nil},
		{"seen again after vanishing starts over", "k", 2*grace + time.Second, []string{"a"}, nil},
	}
	for _, s := range steps {
		got := due(s.backend, s.at, s.listed...)
		if !slices.Equal(got, s.want) {
			t.Errorf("%s: want due %v, got %v", s.name, s.want, got)
		}
	}
	if since, ok := u.since("k", "a"); !ok || !since.Equal(t0.Add(2*grace+time.Second)) {
		t.Errorf("want k/a unaccounted since its last first sight, got %v (%v)", since, ok)
	}
	u.forget("k", "a")
	if _, ok := u.since("k", "a"); ok {
		t.Error("want k/a forgotten")
	}
	if _, ok := u.since("s", "a"); !ok {
		t.Error("want s/a kept when k/a is forgotten")
	}
	if grace0 := u.observe("z", []string{"x"}, t0, 0); len(grace0) != 1 {
		t.Errorf("want a grace of 0 to revoke at first sight, got %v", grace0)
	}
}

// staticLister lists the same principals every time: the listing half
// of a driver this test does not exercise (the drivers test their own
// ListPrincipals against real services).
type staticLister struct {
	installation string
	principals   []string
}

func (l staticLister) ListPrincipals(_ context.Context, installation string) ([]string, error) {
	if installation != l.installation {
		return nil, fmt.Errorf("want installation %s, asked for %s", l.installation, installation)
	}
	return l.principals, nil
}

// hungLister stands for a service that does not answer: it blocks until
// its caller gives up, and says when it was called.
type hungLister struct{ called chan<- struct{} }

func (h hungLister) ListPrincipals(ctx context.Context, _ string) ([]string, error) {
	select {
	case h.called <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// scramUsers is the set of SCRAM users broker b has, read by its
// superuser.
func scramUsers(t *testing.T, adm *kadm.Client) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]bool{}
	for u, info := range d {
		if info.Err == nil && len(info.CredInfos) > 0 {
			users[u] = true
		}
	}
	return users
}

// scramAdmin is an admin client of broker b, as its superuser.
func scramAdmin(t *testing.T, b *kafka.Broker) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: "s3cr3t"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// upsertSCRAM makes SCRAM users of principals, as an earlier cluster's
// controller would have.
func upsertSCRAM(t *testing.T, adm *kadm.Client, principals ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ups []kadm.UpsertSCRAM
	for _, p := range principals {
		ups = append(ups, kadm.UpsertSCRAM{User: p, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw-" + p})
	}
	res, err := adm.AlterUserSCRAMs(ctx, nil, ups)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// kafkaPair opens backends hung and kafka (in that order in the file),
// each on a real broker of its own (two backends on one cluster share a
// claim space), with SCRAM and ACLs, installation named, kafka's
// orphanGrace grace and both backends' requestTimeout timeout.
func kafkaPair(t *testing.T, installation string, grace, timeout time.Duration) (set *backends.Set, kafkaBroker, hungBroker *kafka.Broker) {
	t.Helper()
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true})
	hb := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true})
	sasl := "sasl: {mechanism: SCRAM-SHA-512, username: buckety, password: s3cr3t}, requestTimeout: " + timeout.String()
	yaml := "installation: " + installation + "\nbackends:\n" +
		"- {name: hung, driver: kadm, config: {seedBrokers: ['" + hb.Bootstrap() + "'], " + sasl + "}}\n" +
		"- {name: kafka, driver: kadm, credentials: {orphanGrace: " + grace.String() + "}, config: {seedBrokers: ['" + b.Bootstrap() + "'], " + sasl + "}}\n"
	set = backendstest.Open(t, yaml)
	if names := set.Names(); !slices.Equal(names, []string{"hung", "kafka"}) {
		t.Fatalf("want backends hung, kafka in file order, got %v", names)
	}
	return set, b, hb
}

// testScheme has buckety's kinds and client-go's.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := objects.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHungBackendDoesNotDelayAnothersRevocation: backend hung (first in
// the file) never answers its listing; backend kafka, on a real broker,
// has three principals carrying the installation's marker: one recorded
// in the cache, one recorded only in the API server (written after the
// cache's list), one recorded nowhere. Only the last is revoked, once
// the clock is past kafka's orphanGrace, while hung's listing still
// hangs. Walking the backends one after another, the check would never
// get past hung.
func TestHungBackendDoesNotDelayAnothersRevocation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	const installation = "test-inst"
	grace := 5 * time.Minute
	set, b, _ := kafkaPair(t, installation, grace, 5*time.Second)

	marker := drivers.InstallationMarker(installation)
	orphan := "bky.t.orphan." + marker + ".1"
	cached := "bky.t.cached." + marker + ".1"
	fresh := "bky.t.fresh." + marker + ".1"
	adm := scramAdmin(t, b)
	upsertSCRAM(t, adm, orphan, cached, fresh)
	for _, p := range []string{orphan, cached, fresh} {
		if !scramUsers(t, adm)[p] {
			t.Fatalf("want SCRAM user %s on the broker before the check", p)
		}
	}

	called := make(chan struct{}, 1)
	hung, _ := set.Get("hung")
	hung.Principals = hungLister{called: called}
	kb, _ := set.Get("kafka")
	kb.Principals = staticLister{installation: installation, principals: []string{orphan, cached, fresh}}

	s := testScheme(t)
	rec := func(p string) *v1.BucketyCredential {
		return &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("kafka", p)},
			Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: p, Phase: v1.CredentialActive,
				Owner: v1.ClaimOwner{Namespace: "t", Name: "a-" + p, UID: "uid-" + p}}}
	}
	// The access of each record is live, so the record check leaves them.
	acc := func(p string) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "a-" + p, UID: types.UID("uid-" + p)}}
	}
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(rec(cached), acc(cached), acc(fresh)).Build()
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(rec(cached), rec(fresh), acc(cached), acc(fresh)).Build()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	o := &Orphans{Reconciler: &Reconciler{Client: cache, APIReader: api, Backends: set}, Log: logr.Discard(),
		now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}
	setNow := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }
	revoked := func() float64 {
		var m dto.Metric
		if err := metrics.CredentialsRevoked.WithLabelValues("kafka", metrics.RevokedUnaccounted).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	before := revoked()

	// check runs one CheckOnce, returning once the test gives up on hung.
	type result struct {
		n   int
		err error
	}
	check := func() (release func() result) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel) // a failed test does not leave hung's listing waiting
		done := make(chan result, 1)
		go func() {
			n, err := o.CheckOnce(ctx)
			done <- result{n, err}
		}()
		select {
		case <-called:
		case <-time.After(time.Minute):
			cancel()
			t.Fatal("backend hung's listing was not asked for within a minute")
		}
		return func() result {
			cancel()
			select {
			case r := <-done:
				return r
			case <-time.After(time.Minute):
				t.Fatal("CheckOnce did not return a minute after its context ended")
				return result{}
			}
		}
	}
	// waitSince waits until the check has seen p unaccounted on kafka,
	// while hung still hangs.
	waitSince := func(p string) time.Time {
		t.Helper()
		// A backstop that ends a broken test, not a speed goal.
		deadline := time.Now().Add(time.Minute)
		for {
			if since, ok := o.unaccounted.since("kafka", p); ok {
				return since
			}
			if time.Now().After(deadline) {
				t.Fatalf("want %s seen unaccounted on kafka while hung hangs, not seen within a minute", p)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// First sight: nothing is revoked.
	release := check()
	if since := waitSince(orphan); !since.Equal(now) {
		t.Errorf("want %s unaccounted since the first check, %v; got %v", orphan, now, since)
	}
	r := release()
	if r.n != 0 || r.err == nil || !strings.Contains(r.err.Error(), "backend hung") {
		t.Errorf("first check: want nothing revoked and hung's error, got %d, %v", r.n, r.err)
	}
	if _, ok := o.unaccounted.since("kafka", cached); ok {
		t.Errorf("want %s, recorded in the cache, never counted unaccounted", cached)
	}
	if users := scramUsers(t, adm); !users[orphan] || !users[cached] || !users[fresh] {
		t.Fatalf("within the grace: want every principal kept, got %v", users)
	}

	// Past the grace, hung still hanging: the orphan goes, and only it.
	setNow(now.Add(grace))
	release = check()
	deadline := time.Now().Add(time.Minute) // a backstop, not a speed goal
	// Until the revocation is counted, not only until the user is gone:
	// the broker drops the user before its answer reaches Revoke, and
	// ending the check in between cancels the revocation's last step.
	for scramUsers(t, adm)[orphan] || revoked()-before < 1 {
		if time.Now().After(deadline) {
			release()
			t.Fatalf("want %s revoked while backend hung's listing hangs; still there after a minute", orphan)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r = release()
	if r.n != 1 {
		t.Errorf("want 1 revoked, got %d (%v)", r.n, r.err)
	}
	if r.err == nil || !strings.Contains(r.err.Error(), "backend hung") || strings.Contains(r.err.Error(), "backend kafka") {
		t.Errorf("want hung's error alone, got %v", r.err)
	}
	users := scramUsers(t, adm)
	if !users[cached] || !users[fresh] {
		t.Errorf("want the recorded principals kept (%s in the cache, %s only in the API server), got %v", cached, fresh, users)
	}
	if _, ok := o.unaccounted.since("kafka", fresh); ok {
		t.Errorf("want %s forgotten once a fresh read found its record", fresh)
	}
	if got := revoked() - before; got != 1 {
		t.Errorf("want buckety_credentials_revoked_total{backend=kafka,reason=unaccounted} up by 1, got %v", got)
	}
	var list v1.BucketyCredentialList
	if err := api.List(context.Background(), &list, client.InNamespace("")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("want the records left alone, got %d", len(list.Items))
	}
}

// TestUnaccountedAcrossServiceChange: backend kafka's `service:` was
// changed after its accesses were issued, so their records carry the
// earlier service (and names made from it). Their principals are still
// accounted for: past the grace, only the principal no record names is
// revoked. Matching by the name the current service gives a record, the
// check revoked every live access's credential once the grace passed.
func TestUnaccountedAcrossServiceChange(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	const installation = "test-inst"
	grace := 5 * time.Minute
	set, b, _ := kafkaPair(t, installation, grace, 5*time.Second)
	marker := drivers.InstallationMarker(installation)
	live := "bky.t.live." + marker + ".1"
	orphan := "bky.t.orphan." + marker + ".1"
	adm := scramAdmin(t, b)
	upsertSCRAM(t, adm, live, orphan)
	hung, _ := set.Get("hung")
	hung.Principals = staticLister{installation: installation}
	kb, _ := set.Get("kafka")
	kb.Principals = staticLister{installation: installation, principals: []string{live, orphan}}
	if kb.Config.ClaimScope() != "kafka" {
		t.Fatalf("want backend kafka's service kafka, got %s", kb.Config.ClaimScope())
	}
	const was = "kafka-before"
	rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName(was, live)},
		Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: was, Principal: live, Phase: v1.CredentialActive,
			Owner: v1.ClaimOwner{Namespace: "t", Name: "live", UID: "uid-live"}}}
	acc := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "live", UID: "uid-live"}}
	s := testScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(rec, acc).Build()
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(rec.DeepCopy(), acc.DeepCopy()).Build()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := &Orphans{Reconciler: &Reconciler{Client: cache, APIReader: api, Backends: set}, Log: logr.Discard(),
		now: func() time.Time { return now }}
	ctx := context.Background()
	if n, err := o.CheckOnce(ctx); n != 0 || err != nil {
		t.Fatalf("first check: want nothing revoked, got %d (%v)", n, err)
	}
	if _, ok := o.unaccounted.since("kafka", live); ok {
		t.Errorf("want %s, recorded under service %s, never counted unaccounted", live, was)
	}
	now = now.Add(grace)
	if n, err := o.CheckOnce(ctx); n != 1 || err != nil {
		t.Errorf("past the grace: want the orphan alone revoked, got %d (%v)", n, err)
	}
	users := scramUsers(t, adm)
	if !users[live] || users[orphan] {
		t.Errorf("want %s kept and %s revoked, got %v", live, orphan, users)
	}
}

// TestUnaccountedOnShards: with four shards, each shard's cache holds only
// its own records, while every shard lists all the installation's
// principals. Shard 1 checks nothing (every shard would otherwise count
// the others' principals unaccounted); shard 0's cache holds no record of
// the live principal, another shard's, recorded under the backend's
// earlier service. Past the grace, shard 0 revokes only the principal no
// record names: the live one's record is found by a fresh list of every
// record, not by the name the current service would give it (a read by
// that name missed it and revoked a live credential).
func TestUnaccountedOnShards(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	const installation = "test-inst"
	grace := 5 * time.Minute
	set, b, _ := kafkaPair(t, installation, grace, 5*time.Second)
	marker := drivers.InstallationMarker(installation)
	live := "bky.t.live." + marker + ".1"
	orphan := "bky.t.orphan." + marker + ".1"
	adm := scramAdmin(t, b)
	upsertSCRAM(t, adm, live, orphan)
	hung, _ := set.Get("hung")
	hung.Principals = staticLister{installation: installation}
	kb, _ := set.Get("kafka")
	kb.Principals = staticLister{installation: installation, principals: []string{live, orphan}}
	const was = "kafka-before"
	rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName(was, live)},
		Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: was, Principal: live, Phase: v1.CredentialActive,
			Owner: v1.ClaimOwner{Namespace: "t", Name: "live", UID: "uid-live"}}}
	s := testScheme(t)
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(rec).Build()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	orphans := func(k int) *Orphans {
		// The shard's cache: another shard's record is not in it.
		cache := fake.NewClientBuilder().WithScheme(s).Build()
		return &Orphans{Reconciler: &Reconciler{Client: cache, APIReader: api, Backends: set, Serves: &shard.Serves{K: k, N: 4}},
			Log: logr.Discard(), now: func() time.Time { return now }}
	}
	zero, one := orphans(0), orphans(1)
	ctx := context.Background()
	check := func(when string, o *Orphans, want int) {
		t.Helper()
		if n, err := o.CheckOnce(ctx); n != want || err != nil {
			t.Fatalf("%s: want %d revoked, got %d (%v)", when, want, n, err)
		}
	}
	check("shard 0, first sight", zero, 0)
	check("shard 1, first sight", one, 0)
	if _, ok := zero.unaccounted.since("kafka", orphan); !ok {
		t.Fatalf("want shard 0 to count %s unaccounted", orphan)
	}
	now = now.Add(grace)
	check("shard 1, past the grace", one, 0)
	if _, ok := one.unaccounted.since("kafka", orphan); ok {
		t.Errorf("want shard 1 to count nothing unaccounted: shard 0 checks")
	}
	check("shard 0, past the grace", zero, 1)
	users := scramUsers(t, adm)
	if !users[live] || users[orphan] {
		t.Errorf("want %s kept (another shard's, recorded under service %s) and %s revoked by shard 0, got %v", live, was, orphan, users)
	}
	if _, ok := zero.unaccounted.since("kafka", live); ok {
		t.Errorf("want %s forgotten once the list of every record found it", live)
	}
}
