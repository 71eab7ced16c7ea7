package kadm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// openAnother opens a backend of its own on f's broker, as a second
// installation pointed at the same cluster would.
func (f *fixture) openAnother(t *testing.T) *Backend {
	t.Helper()
	return f.openWith(t, nil)
}

// openWith is openAnother with f's config changed by mutate.
func (f *fixture) openWith(t *testing.T, mutate func(*Config)) *Backend {
	t.Helper()
	cfg := *f.backend.cfg
	if mutate != nil {
		mutate(&cfg)
	}
	be, err := New().Open(context.Background(), "kafka", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return be.(*Backend)
}

// TestOwnerContract runs the owner-record contract (drivertest) on the
// registry topic of one broker, each backend opened on its own.
func TestOwnerContract(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	drivertest.OwnerContract(t, drivertest.OwnerCase{
		Open:   func(t *testing.T) drivers.Backend { return f.openAnother(t) },
		Prefix: "owned",
	})
	// The registry is the compacted topic the config names, one partition.
	st, err := f.backend.describe(context.Background(), DefaultOwnerRegistryTopic, true)
	if err != nil || !st.exists {
		t.Fatalf("want the registry %s created, got %+v, %v", DefaultOwnerRegistryTopic, st, err)
	}
	if st.partitions != 1 || st.dynamic["cleanup.policy"] != "compact" {
		t.Errorf("want the registry with 1 partition and cleanup.policy compact, got %d partitions and %v", st.partitions, st.dynamic)
	}
}

// TestOwnerRegistryConfiguredTopic: ownerRegistry.topic moves the
// registry; installations on one topic see each other's records, and one
// on another topic does not.
func TestOwnerRegistryConfiguredTopic(t *testing.T) {
	f := newFixture(t, kafka.Options{}, func(c *Config) { c.OwnerRegistry = &OwnerRegistry{Topic: "__owners-x"} })
	ctx := context.Background()
	rec := &drivers.OwnerRecord{Installation: "east", Namespace: "n", Name: "b", UID: "u", State: drivers.OwnerHeld}
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "t1"}, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: "t1"}); err != nil || !got.Same(rec) {
		t.Errorf("same registry: want %v, got %v, %v", rec, got, err)
	}
	cfg := *f.backend.cfg
	cfg.OwnerRegistry = nil
	be, err := New().Open(ctx, "kafka", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if got, err := be.(*Backend).ReadOwner(ctx, drivers.Resource{Name: "t1"}); err != nil || got != nil {
		t.Errorf("default registry: want no record, got %v, %v", got, err)
	}
	if st, err := f.backend.describe(ctx, "__owners-x", false); err != nil || !st.exists {
		t.Errorf("want the configured registry __owners-x created, got %+v, %v", st, err)
	}
}

// TestOwnerRequests counts what owner records cost: concurrent writes share
// Produce requests, concurrent fresh reads share catch-ups, a fresh read
// of a registry that did not grow is one ListOffsets and no Fetch, and a
// read within MaxAge is none.
func TestOwnerRequests(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	rec := func(i int) *drivers.OwnerRecord {
		return &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: fmt.Sprintf("b%d", i), UID: fmt.Sprintf("u%d", i), State: drivers.OwnerHeld}
	}
	// First use: creates the registry and loads it.
	if _, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "warm-up"}); err != nil {
		t.Fatal(err)
	}
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "warm-up"}, rec(0)); err != nil {
		t.Fatal(err)
	}

	const n = 40
	f.counter.Reset()
	concurrently := func(fn func(i int) error) {
		t.Helper()
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range errs {
			wg.Go(func() {
				<-start
				errs[i] = fn(i)
			})
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	concurrently(func(i int) error {
		return f.backend.WriteOwner(ctx, drivers.Resource{Name: fmt.Sprintf("topic-%d", i)}, rec(i))
	})
	counts := f.counter.Ops()
	t.Logf("%d concurrent WriteOwner: %v", n, counts)
	if p := counts["Produce"]; p < 1 || p >= n {
		t.Errorf("want %d concurrent writes to share Produce requests (1 to %d), got %d", n, n-1, p)
	}

	f.counter.Reset()
	other := f.openAnother(t)
	concurrently(func(i int) error {
		got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: fmt.Sprintf("topic-%d", (i+1)%n)})
		if err == nil && !got.Same(rec((i+1)%n)) {
			err = fmt.Errorf("topic-%d: want %v, got %v", (i+1)%n, rec((i+1)%n), got)
		}
		return err
	})
	counts = f.counter.Ops()
	t.Logf("%d concurrent fresh ReadOwner: %v", n, counts)
	if l := counts["ListOffsets"]; l < 1 || l >= n {
		t.Errorf("want %d concurrent fresh reads to share catch-ups (1 to %d ListOffsets), got %d", n, n-1, l)
	}
	if counts["Fetch"] != 0 {
		t.Errorf("want no Fetch: the registry did not grow past this backend's own writes, got %d", counts["Fetch"])
	}

	// Another installation's write is fetched by the next fresh read.
	if err := other.WriteOwner(ctx, drivers.Resource{Name: "topic-0"}, rec(99)); err != nil {
		t.Fatal(err)
	}
	f.counter.Reset()
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "topic-0"}); err != nil || !got.Same(rec(99)) {
		t.Fatalf("want the other backend's write %v, got %v, %v", rec(99), got, err)
	}
	if counts = f.counter.Ops(); counts["ListOffsets"] != 1 || counts["Fetch"] != 1 {
		t.Errorf("fresh read after one foreign write: want 1 ListOffsets and 1 Fetch, got %v", counts)
	}
	f.counter.Reset()
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "topic-0", MaxAge: time.Hour}); err != nil || !got.Same(rec(99)) {
		t.Fatalf("MaxAge read: want %v, got %v, %v", rec(99), got, err)
	}
	if _, all := f.counter.Reset(); all != 0 {
		t.Errorf("a read within MaxAge of the last catch-up: want no request, got %d", all)
	}
}

// TestOwnerRegistryOutOfTenantsReach: a tenant's SCRAM user, granted
// ReadWrite on its own topic, can neither read nor write the registry,
// and no access, create or delete can name it.
func TestOwnerRegistryOutOfTenantsReach(t *testing.T) {
	f := scopedFixture(t, true)
	ctx := context.Background()
	f.ensure(t, "orders", nil)
	rec := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "orders", UID: "u", State: drivers.OwnerHeld}
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "orders"}, rec); err != nil {
		t.Fatal(err)
	}
	rw := grantAs(t, f.backend, "orders", "uid-rw", "ReadWrite", "", false)
	if err := produce(secretClient(t, rw), "orders"); err != nil {
		t.Fatalf("want the tenant's own topic writable (the credential works), got %v", err)
	}
	if err := produce(secretClient(t, rw, kgo.DisableIdempotentWrite()), DefaultOwnerRegistryTopic); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce to the registry: want TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	cl := secretClient(t, rw, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{DefaultOwnerRegistryTopic: {0: kgo.NewOffset().AtStart()}}))
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fetches := cl.PollFetches(pctx)
	var got int
	fetches.EachRecord(func(*kgo.Record) { got++ })
	if got != 0 {
		t.Errorf("consume the registry: want no record, got %d", got)
	}
	if err := fetches.Err(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("consume the registry: want TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}

	a := drivers.Access{Resource: DefaultOwnerRegistryTopic, Namespace: "team", Name: "spy", UID: "uid-spy", Role: drivers.RoleReadOnly}
	a.Principal = f.backend.Principal(a, 1)
	if _, err := f.backend.Grant(ctx, a); err == nil || !strings.Contains(err.Error(), "owner registry") {
		t.Errorf("Grant on the registry: want refused, got %v", err)
	}
	if ok, err := f.backend.InspectPrincipal(ctx, a.Principal); err != nil || ok {
		t.Errorf("want no user issued for a grant on the registry, got %v, %v", ok, err)
	}
	if _, err := f.backend.Ensure(ctx, drivers.Resource{Name: DefaultOwnerRegistryTopic}); err == nil {
		t.Error("Ensure of the registry: want refused")
	}
	if err := f.backend.Delete(ctx, drivers.Resource{Name: DefaultOwnerRegistryTopic}); err == nil {
		t.Error("Delete of the registry: want refused")
	}
	if got, err := f.openAnother(t).ReadOwner(ctx, drivers.Resource{Name: "orders"}); err != nil || !got.Same(rec) {
		t.Errorf("after the refused calls: want the record %v kept, got %v, %v", rec, got, err)
	}
}

func TestValidateNameRefusesRegistry(t *testing.T) {
	d := New()
	p := field.NewPath("spec", "name")
	for _, tc := range []struct {
		cfg  *Config
		name string
	}{
		{nil, DefaultOwnerRegistryTopic},
		{&Config{}, DefaultOwnerRegistryTopic},
		{&Config{OwnerRegistry: &OwnerRegistry{Topic: "__owners-x"}}, "__owners-x"},
		{&Config{OwnerRegistry: &OwnerRegistry{Topic: "__owners-x"}}, DefaultOwnerRegistryTopic},
	} {
		var cfg drivers.Config
		if tc.cfg != nil {
			cfg = tc.cfg
		}
		_, errs := d.ValidateName(p, cfg, tc.name)
		if !strings.Contains(errs.ToAggregate().Error(), "owner registry") {
			t.Errorf("config %+v, name %s: want refused as the owner registry, got %v", tc.cfg, tc.name, errs)
		}
	}
	if _, errs := d.ValidateName(p, &Config{OwnerRegistry: &OwnerRegistry{Topic: "__owners-x"}}, "owners-x"); len(errs) != 0 {
		t.Errorf("want an ordinary name accepted, got %v", errs)
	}
	for topic, want := range map[string]string{
		"owners":     `must start with "__"`,
		"__own ers":  "may contain only",
		"__owners-y": "",
	} {
		c := &Config{SeedBrokers: []string{"127.0.0.1:9092"}, OwnerRegistry: &OwnerRegistry{Topic: topic}}
		errs := c.Validate(field.NewPath("config"))
		switch {
		case want == "" && len(errs) != 0:
			t.Errorf("ownerRegistry.topic %q: want accepted, got %v", topic, errs)
		case want != "" && !strings.Contains(errs.ToAggregate().Error(), want):
			t.Errorf("ownerRegistry.topic %q: want an error saying %q, got %v", topic, want, errs)
		case want != "" && errs[0].Field != "config.ownerRegistry.topic":
			t.Errorf("ownerRegistry.topic %q: want the error on config.ownerRegistry.topic, got %s", topic, errs[0].Field)
		}
	}
}

// TestPrincipalsCarryTheInstallation: a principal names its installation's
// marker, its group prefix does not change, and ListPrincipals returns an
// installation's own principals only, never an unmarked one.
func TestPrincipalsCarryTheInstallation(t *testing.T) {
	base := drivers.Access{Resource: "orders", Namespace: "team", Name: "app", UID: "uid-1", Role: drivers.RoleReadWrite}
	east, west := base, base
	east.Installation, west.Installation = "east", "west"
	east.UID, west.UID = "uid-east", "uid-west"
	if p := PrincipalFor(east, 2); p != "bky-"+drivers.InstallationMarker("east")+".team.app."+accessHash("uid-east")+".2" {
		t.Errorf("want bky-<marker>.team.app.<hash>.2, got %s", p)
	}
	if p := PrincipalFor(base, 1); p != "bky.team.app."+accessHash("uid-1")+".1" {
		t.Errorf("unmarked: want bky.team.app.<hash>.1 as before, got %s", p)
	}
	marked := base
	marked.Installation = "east"
	if groupPrefix(marked) != groupPrefix(base) {
		t.Errorf("want the group prefix unchanged by the installation, got %s and %s", groupPrefix(marked), groupPrefix(base))
	}
	for _, u := range []string{PrincipalFor(east, 1), PrincipalFor(base, 1)} {
		if !isBucketyUser(u) {
			t.Errorf("want %s taken for a buckety user", u)
		}
	}
	for _, u := range []string{"bky-east.team.app.x.1", "bky-0123456.x", "alice", "bkyx.1"} {
		if isBucketyUser(u) {
			t.Errorf("want %s not taken for a buckety user", u)
		}
	}

	f := scopedFixture(t, true)
	ctx := context.Background()
	f.ensure(t, "orders", nil)
	issue := func(a drivers.Access, serial int) string {
		t.Helper()
		a.Principal = f.backend.Principal(a, serial)
		if _, err := f.backend.Grant(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a.Principal
	}
	e1, e2, w1, legacy := issue(east, 1), issue(east, 2), issue(west, 1), issue(base, 1)
	for inst, want := range map[string][]string{"east": {e1, e2}, "west": {w1}, "north": nil} {
		got, err := f.backend.ListPrincipals(ctx, inst)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("ListPrincipals(%s): want %v, got %v", inst, want, got)
		}
		if slices.Contains(got, legacy) {
			t.Errorf("ListPrincipals(%s): want the unmarked %s never listed", inst, legacy)
		}
	}
	// The credential sweep judges marked principals as it does unmarked.
	a := east
	a.Principal = e1
	b := base
	b.Principal = legacy
	if drifted, err := f.backend.SweepCredentials(ctx, []drivers.Access{a, b}); err != nil || len(drifted) != 0 {
		t.Errorf("SweepCredentials: want no drift, got %v, %v", drifted, err)
	}
	if err := f.backend.Revoke(ctx, drivers.Access{Principal: e1}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.backend.ListPrincipals(ctx, "east"); err != nil || !slices.Equal(got, []string{e2}) {
		t.Errorf("after revoking %s: want [%s], got %v, %v", e1, e2, got, err)
	}
}

// TestInspectAsksTheController: a broker whose metadata does not know a
// topic (it restarted a moment ago) does not make the topic look missing:
// the controller's answer to a validate-only create decides. A missing
// topic costs Inspect one request, and nothing is created.
//
// The broker here is franz-go's kfake cluster in this process, because
// only in-process can its Metadata answer be made stale (Cluster.Control).
func TestInspectAsksTheController(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker")
	}
	counter := &drivertest.Requests{IsWrite: func(api string) bool { return writeAPIs[api] }}
	c, b := inProcessBackend(t, &Driver{Hooks: []kgo.Hook{requestHook{counter}}}, kfake.NumBrokers(1), kfake.DefaultNumPartitions(1))
	ctx := context.Background()
	if _, err := b.Ensure(ctx, drivers.Resource{Name: "foreign"}); err != nil {
		t.Fatal(err)
	}
	// Every Metadata request naming foreign is answered as a broker that
	// has not caught up would.
	c.ControlKey(kmsg.Metadata.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.MetadataRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic == nil || *req.Topics[0].Topic != "foreign" {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.Version = req.Version
		resp.ControllerID = 0
		for i, addr := range c.ListenAddrs() {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err, true
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				return nil, err, true
			}
			mb := kmsg.NewMetadataResponseBroker()
			mb.NodeID, mb.Host, mb.Port = int32(i), host, int32(n)
			resp.Brokers = append(resp.Brokers, mb)
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr("foreign")
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		resp.Topics = append(resp.Topics, mt)
		return resp, nil, true
	})
	if st, err := b.describe(ctx, "foreign", false); err != nil || st.exists {
		t.Fatalf("the stale answer is not in place: want Metadata to say missing, got %+v, %v", st, err)
	}
	ins, err := b.Inspect(ctx, drivers.Resource{Name: "foreign"})
	if !ins.Exists {
		t.Errorf("want a topic the controller knows reported existing whatever Metadata says, got %+v", ins)
	}
	if !drivers.IsUnavailable(err) {
		t.Errorf("want the disagreement reported as unavailable (the next pass asks again), got %v", err)
	}

	// Connections and the controller's id are known from here on.
	if ins, err := b.Inspect(ctx, drivers.Resource{Name: "warm-up"}); err != nil || ins.Exists {
		t.Fatalf("want a missing topic reported missing, got %+v, %v", ins, err)
	}
	counter.Reset()
	ins, err = b.Inspect(ctx, drivers.Resource{Name: "fresh", Parameters: map[string]string{"partitions": "3"}})
	if err != nil || ins.Exists {
		t.Fatalf("want a missing topic reported missing, got %+v, %v", ins, err)
	}
	if counts := counter.Ops(); counts["CreateTopics"] != 1 || len(counts) != 1 {
		t.Errorf("Inspect of a missing topic: want exactly one request (a validate-only CreateTopics), got %v", counts)
	}
	if st, err := b.describe(ctx, "fresh", false); err != nil || st.exists {
		t.Errorf("want the validate-only create to create nothing, got %+v, %v", st, err)
	}
}

// accessHash is the 12 hex digits of a UID's SHA-256 in principal names.
func accessHash(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return hex.EncodeToString(sum[:6])
}

// ownerAPIs are the Kafka APIs only owner records use on a create: the
// registry's Produce (and the idempotent producer's InitProducerID), and a
// catch-up's ListOffsets and Fetch. Metadata and CreateTopics of the
// registry itself are once per backend and go to the warm-up.
var ownerAPIs = []string{"Produce", "InitProducerID", "ListOffsets", "Fetch"}

// TestOwnerRequestsPerCreate counts what owner records add to a create
// (issue 54, "new features at no visible cost"): n concurrent creates of
// new topics, each as the controller makes it (Inspect, the registry's
// record of the missing name, Ensure, then the Held record), cost at most
// one owner-record request per create, batched, over what the same creates
// cost without the records.
func TestOwnerRequestsPerCreate(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	// First use: the registry created and loaded, the producer's ID.
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "warm-up"}, &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "warm-up", State: drivers.OwnerHeld}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	creates := func(prefix string, record bool) map[string]int {
		t.Helper()
		f.counter.Reset()
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				r := drivers.Resource{Name: fmt.Sprintf("%s-%d", prefix, i), Parameters: map[string]string{"partitions": "1"}}
				in, err := f.backend.Inspect(ctx, r)
				if err != nil {
					errs[i] = err
					return
				}
				if record && !in.Exists {
					// The registry's record of the missing topic's name
					// (nameHeldElsewhere), at most a sweep interval old.
					read := r
					read.MaxAge = 30 * time.Second
					if rec, err := f.backend.ReadOwner(ctx, read); err != nil || rec != nil {
						errs[i] = fmt.Errorf("the record of new topic %s: %v, %v", r.Name, rec, err)
						return
					}
				}
				r.CreateOnly = true
				if _, err := f.backend.Ensure(ctx, r); err != nil || !record {
					errs[i] = err
					return
				}
				errs[i] = f.backend.WriteOwner(ctx, r, &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: r.Name, State: drivers.OwnerHeld})
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		return f.counter.Ops()
	}
	without := creates("bare", false)
	with := creates("owned", true)
	sum := func(c map[string]int, apis []string) (s int) {
		for _, api := range apis {
			s += c[api]
		}
		return s
	}
	all := func(c map[string]int) (s int) {
		for _, v := range c {
			s += v
		}
		return s
	}
	t.Logf("%d creates without owner records: %v; with: %v", n, without, with)
	if o := sum(without, ownerAPIs); o != 0 {
		t.Errorf("creates without owner records: want no %v request, got %v", ownerAPIs, without)
	}
	if o := sum(with, ownerAPIs); o < 1 || o > n {
		t.Errorf("%d creates with owner records: want 1 to %d owner-record requests (at most one per create), got %d: %v", n, n, o, with)
	}
	if with["Produce"] >= n {
		t.Errorf("%d concurrent creates: want their records batched into fewer than %d Produce requests, got %d", n, n, with["Produce"])
	}
	// The creates' own requests are the same with and without: the extra
	// is the owner records' alone. Coalescing varies by a few requests
	// from batch to batch, so this compares the owner-record kinds only.
	t.Logf("owner-record requests per create: %.3f; all requests per create: %.3f with, %.3f without",
		float64(sum(with, ownerAPIs))/n, float64(all(with))/n, float64(all(without))/n)
}

// TestOwnerRegistryCreatedAgain: the registry topic deleted (by hand, or
// with the cluster) and created again by another installation, which
// writes to it, is read again from its start by a backend whose table had
// read the old one further than the new one reaches: it sees the other
// installation's record, and no longer its own from the old log (it
// writes those again on its next pass), instead of a stale table that
// never catches up.
func TestOwnerRegistryCreatedAgain(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	rec := func(inst, name string) *drivers.OwnerRecord {
		return &drivers.OwnerRecord{Installation: inst, Namespace: "team", Name: name, UID: "u-" + name, State: drivers.OwnerHeld}
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: name}, rec("east", name)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil || !got.Same(rec("east", "a")) {
		t.Fatalf("before: want east's record of a, got %v, %v", got, err)
	}
	topic := f.backend.cfg.registryTopic()
	resp, err := f.admin.DeleteTopics(ctx, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("delete the registry: %v %v", err, resp[topic].Err)
	}
	other := f.openAnother(t)
	wait.For(t, 30*time.Second, "the other installation writing to a registry it creates again", func() (bool, string) {
		err := other.WriteOwner(ctx, drivers.Resource{Name: "x"}, rec("west", "x"))
		return err == nil, fmt.Sprint(err)
	})
	got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "x"})
	if err != nil || !got.Same(rec("west", "x")) {
		t.Errorf("a fresh read after the registry was created again: want west's record of x, got %v, %v", got, err)
	}
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil || got != nil {
		t.Errorf("east's record of a, gone with the old registry: want none, got %v, %v", got, err)
	}
	if f.backend.RegistryEpoch() == 0 {
		t.Error("want the registry epoch moved once the registry was found created again")
	}
	// East, whose producer knew the old registry's topic ID (Produce keys
	// topics by ID), writes its record again to the new one: it was
	// answered UNKNOWN_TOPIC_ID for good until the topic was purged from
	// its client.
	wait.For(t, 30*time.Second, "east writing its record again to the registry created again", func() (bool, string) {
		err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "a"}, rec("east", "a"))
		return err == nil, fmt.Sprint(err)
	})
	if got, err := other.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil || !got.Same(rec("east", "a")) {
		t.Errorf("east's record of a written again: want it read by west, got %v, %v", got, err)
	}
}

// TestOwnerRegistryThatLostRecordsMovesTheEpoch: the registry keeps its
// topic ID but no longer holds what this backend's table read (here its
// start moved past the table by DeleteRecords, as a wiped log directory
// or an unclean election loses a tail): the table is read again from what
// is left, and the registry epoch moves, so that the controller has every
// Buckety of the backend write its record again at once. The epoch moved
// only with a new topic ID, and the lost records came back only at each
// Buckety's re-check, hours later.
func TestOwnerRegistryThatLostRecordsMovesTheEpoch(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	rec := func(inst, name string) *drivers.OwnerRecord {
		return &drivers.OwnerRecord{Installation: inst, Namespace: "team", Name: name, UID: "u-" + name, State: drivers.OwnerHeld}
	}
	for _, name := range []string{"a", "b"} {
		if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: name}, rec("east", name)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil || !got.Same(rec("east", "a")) {
		t.Fatalf("before: want east's record of a, got %v, %v", got, err)
	}
	epoch := f.backend.RegistryEpoch()
	other := f.openAnother(t)
	for _, name := range []string{"x", "y"} {
		if err := other.WriteOwner(ctx, drivers.Resource{Name: name}, rec("west", name)); err != nil {
			t.Fatal(err)
		}
	}
	topic := f.backend.cfg.registryTopic()
	ends, err := f.admin.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := f.admin.DeleteRecords(ctx, ends.Offsets())
	if err != nil {
		t.Fatal(err)
	}
	if err := deleted.Error(); err != nil {
		t.Fatalf("delete the registry's records: %v", err)
	}
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "x"}); err != nil || got != nil {
		t.Errorf("west's record of x, deleted with the rest: want none, got %v, %v", got, err)
	}
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil || got != nil {
		t.Errorf("east's record of a, deleted: want none (its Bucketies write it again), got %v, %v", got, err)
	}
	if f.backend.RegistryEpoch() == epoch {
		t.Error("want the registry epoch moved once the registry was found to have lost what the table read")
	}
}

// TestOwnerRegistryCaughtUpThatLostRecordsMovesTheEpoch: a backend whose
// table is caught up fetches nothing from a registry whose records were
// deleted (DeleteRecords up to its end, or a retention of a registry
// created by hand) with the same topic ID: nothing tells it. Its next
// full load finds none of the live records it held, which compaction
// never removes (it keeps a key's latest record or tombstone): the epoch
// moves, so that every Buckety writes its record again now, where the
// records were lost to every installation until each Buckety's re-check,
// and those of retained or handed-over resources for good.
func TestOwnerRegistryCaughtUpThatLostRecordsMovesTheEpoch(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	held := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "a", UID: "u-a", State: drivers.OwnerHeld}
	if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: "a"}, held); err != nil {
		t.Fatal(err)
	}
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil || !got.Same(held) {
		t.Fatalf("before: want east's record of a, got %v, %v", got, err)
	}
	epoch := f.backend.RegistryEpoch()
	ends, err := f.admin.ListEndOffsets(ctx, f.backend.cfg.registryTopic())
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := f.admin.DeleteRecords(ctx, ends.Offsets())
	if err != nil {
		t.Fatal(err)
	}
	if err := deleted.Error(); err != nil {
		t.Fatalf("delete the registry's records: %v", err)
	}
	if _, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if f.backend.RegistryEpoch() != epoch {
		t.Fatal("a catch-up of a table at the log's end fetches nothing: the test expects the loss unseen until the full load")
	}
	f.backend.owners.mu.Lock()
	f.backend.owners.full = true // the hourly full load (reloadAfter)
	f.backend.owners.mu.Unlock()
	if got, err := f.backend.ReadOwner(ctx, drivers.Resource{Name: "a"}); err != nil || got != nil {
		t.Errorf("east's record of a, deleted: want none (its Bucketies write it again), got %v, %v", got, err)
	}
	if f.backend.RegistryEpoch() == epoch {
		t.Error("want the registry epoch moved once a full load finds the live records the table held gone")
	}
}
