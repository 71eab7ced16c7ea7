package access

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// countedRevokes passes every call to the backend, counting the
// revocations.
type countedRevokes struct {
	drivers.Backend
	n atomic.Int32
}

func (c *countedRevokes) Revoke(ctx context.Context, a drivers.Access) error {
	c.n.Add(1)
	return c.Backend.Revoke(ctx, a)
}

// countedIssuing passes every call to the backend's issuer, counting
// the Issuing probes (the unaccounted check's first request).
type countedIssuing struct {
	drivers.CredentialIssuer
	n atomic.Int32
}

func (c *countedIssuing) Issuing(ctx context.Context) (drivers.Issuing, error) {
	c.n.Add(1)
	return c.CredentialIssuer.Issuing(ctx)
}

// TestOrphansHungBackendDelaysNoOther: each backend is checked on a loop
// of its own. Backend hung never answers its listing; meanwhile backend
// kafka's check runs again and again, and revokes its unaccounted
// principal once the clock is past its orphanGrace. With one loop
// waiting for every backend's check, kafka was checked once (the orphan
// first seen) and never again while hung hung.
func TestOrphansHungBackendDelaysNoOther(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	const installation = "test-inst"
	grace := 5 * time.Minute
	set, b, _ := kafkaPair(t, installation, grace, 5*time.Second)
	orphan := "bky.t.orphan." + drivers.InstallationMarker(installation) + ".1"
	adm := scramAdmin(t, b)
	upsertSCRAM(t, adm, orphan)

	called := make(chan struct{}, 1)
	hung, _ := set.Get("hung")
	hung.Principals = hungLister{called: called}
	kb, _ := set.Get("kafka")
	kb.Principals = staticLister{installation: installation, principals: []string{orphan}}

	s := testScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).Build()
	api := fake.NewClientBuilder().WithScheme(s).Build()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	o := &Orphans{Reconciler: &Reconciler{Client: cache, APIReader: api, Backends: set}, Log: logr.Discard(), Interval: 20 * time.Millisecond,
		now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := o.Start(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("Start did not return a minute after its context ended")
		}
	}()
	select {
	case <-called:
	case <-time.After(time.Minute):
		t.Fatal("backend hung's listing was not asked for within a minute")
	}
	// Backstops that end a broken test, not speed goals.
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := o.unaccounted.since("kafka", orphan); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %s seen unaccounted on kafka while hung hangs, not seen within a minute", orphan)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	now = now.Add(grace)
	mu.Unlock()
	deadline = time.Now().Add(time.Minute)
	for scramUsers(t, adm)[orphan] {
		if time.Now().After(deadline) {
			t.Fatalf("want %s revoked by a later check of kafka while hung's first still hangs; still there after a minute", orphan)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCheckStopsWhenTheBackendHangs: a backend that stops answering ends
// its check at the first revocation that times out: the other
// credentials to revoke, and the listing of unaccounted principals, wait
// for the next check rather than each waiting out requestTimeout (with a
// thousand, for hours). The other backend's check is not affected.
func TestCheckStopsWhenTheBackendHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	const installation = "test-inst"
	set, b, _ := kafkaPair(t, installation, time.Minute, time.Second)
	kb, _ := set.Get("kafka")
	revokes := &countedRevokes{Backend: kb.Backend}
	kb.Backend = revokes
	issuing := &countedIssuing{CredentialIssuer: kb.Issuer}
	kb.Issuer = issuing

	// Three records whose access is gone: each to be revoked.
	var recs []*v1.BucketyCredential
	for _, name := range []string{"a", "b", "c"} {
		p := "bky.t." + name + "." + drivers.InstallationMarker(installation) + ".1"
		recs = append(recs, &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("kafka", p)},
			Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: p, Phase: v1.CredentialActive,
				Owner: v1.ClaimOwner{Namespace: "t", Name: name, UID: "uid-" + name}}})
	}
	s := testScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(recs[0], recs[1], recs[2]).Build()
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(recs[0], recs[1], recs[2]).Build()
	o := &Orphans{Reconciler: &Reconciler{Client: cache, APIReader: api, Backends: set}, Log: logr.Discard()}
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	n, err := o.CheckOnce(context.Background())
	if n != 0 || !drivers.IsUnavailable(err) || !strings.Contains(err.Error(), "backend kafka") {
		t.Errorf("want nothing revoked and backend kafka unavailable, got %d (%v)", n, err)
	}
	if got := revokes.n.Load(); got != 1 {
		t.Errorf("want the check stopped at the first revocation, got %d revocations asked", got)
	}
	if got := issuing.n.Load(); got != 0 {
		t.Errorf("want no check for unaccounted principals after the backend stopped answering, got %d requests of it", got)
	}
}
