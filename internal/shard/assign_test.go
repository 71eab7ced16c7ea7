package shard_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// tracker records which replica runs each shard's work, and fails the test
// the moment two run one shard at once.
type tracker struct {
	t       *testing.T
	mu      sync.Mutex
	running map[int]string
	// starts counts the shard runs started, moves included.
	starts int
	// stopping is how long a run takes to return once its context has
	// ended (200 ms when zero).
	stopping time.Duration
}

// run is replica id's shard work: it runs until its context ends, then
// takes a moment to finish, as in-flight reconciles do.
func (tr *tracker) run(id string) func(context.Context, int) error {
	return func(ctx context.Context, k int) error {
		tr.mu.Lock()
		if other, ok := tr.running[k]; ok {
			tr.t.Errorf("shard %d run by %s and %s at once", k, other, id)
		}
		tr.running[k] = id
		tr.starts++
		tr.mu.Unlock()
		<-ctx.Done()
		time.Sleep(cmp.Or(tr.stopping, 200*time.Millisecond))
		tr.mu.Lock()
		if tr.running[k] == id {
			delete(tr.running, k)
		}
		tr.mu.Unlock()
		return nil
	}
}

// counts is how many shards each replica runs, sorted, with the replicas
// running none among ids.
func (tr *tracker) counts(ids ...string) []int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	by := map[string]int{}
	for _, id := range tr.running {
		by[id]++
	}
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		out = append(out, by[id])
	}
	sort.Ints(out)
	return out
}

// until waits, up to 90 s, for the replicas ids to run shards as counts
// says (want), failing the test with what otherwise.
func (tr *tracker) until(t *testing.T, what, want string, ids ...string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for fmt.Sprint(tr.counts(ids...)) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 90s; running %v", what, tr.counts(ids...))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runBy lists the shards replica id runs.
func (tr *tracker) runBy(id string) []int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []int
	for k, r := range tr.running {
		if r == id {
			out = append(out, k)
		}
	}
	sort.Ints(out)
	return out
}

// replica is one Assigner, started and stoppable.
type replica struct {
	a       *shard.Assigner
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startReplica starts a's Assigner; stop ends it.
func startReplica(a *shard.Assigner) *replica {
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Start(ctx) }()
	return r
}

func (r *replica) stop(t *testing.T) {
	t.Helper()
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("replica %s stopped with %v", r.a.Identity, err)
	}
}

// leaseClient is a client of a control plane of its own, stopped when the
// test ends.
func leaseClient(t *testing.T) client.WithWatch {
	t.Helper()
	cp := controlplane.StartT(t, controlplane.Options{})
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(cp.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// failingClient is base whose Gets, Lists, Creates and Updates fail with
// fail's error while it returns one (a replica cut off from the API
// server).
func failingClient(base client.WithWatch, fail func() error) client.WithWatch {
	return interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := fail(); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
	})
}

func TestShardsSplitMoveAndSurviveALostReplica(t *testing.T) {
	base := leaseClient(t)
	tr := &tracker{t: t, running: map[int]string{}}
	// cut holds the replicas cut off from the API server: every request of
	// theirs fails, as in a network partition.
	var cut sync.Map
	start := func(id string, shards int) *replica {
		var off atomic.Bool
		cut.Store(id, &off)
		fail := func() error {
			if off.Load() {
				return errors.New("cut off from the API server")
			}
			return nil
		}
		c := failingClient(base, fail)
		a := &shard.Assigner{
			Client: c, Namespace: "default", Name: "buckety-controller.buckety.yolean.se", Identity: id, Shards: shards,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond,
			Run: tr.run(id), Log: zap.New(zap.UseDevMode(true)).WithName(id),
		}
		r := startReplica(a)
		return r
	}
	until := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 90s; running %v", what, tr.counts("a", "b", "c", "d"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	is := func(ids []string, want ...int) func() bool {
		return func() bool { return fmt.Sprint(tr.counts(ids...)) == fmt.Sprint(want) }
	}

	a := start("a", 4)
	until("one replica runs all four shards", is([]string{"a"}, 4))
	b := start("b", 4)
	until("two replicas run two shards each", is([]string{"a", "b"}, 2, 2))
	c := start("c", 4)
	until("three replicas run 1, 1 and 2", is([]string{"a", "b", "c"}, 1, 1, 2))

	// b is cut off from the API server: it must stop its shards' work by
	// its renew deadline, and the others take them once the leases expire.
	v, _ := cut.Load("b")
	v.(*atomic.Bool).Store(true)
	cutAt := time.Now()
	until("the others run b's shards", is([]string{"a", "c"}, 2, 2))
	t.Logf("b's shards ran again %s after b was cut off (lease 3s)", time.Since(cutAt).Round(time.Millisecond))
	b.stop(t)

	// A replica that stops cleanly hands its shards over at once.
	a.stop(t)
	until("c runs every shard", is([]string{"c"}, 4))

	// A replica running another number of shards waits for the older
	// one to go, then runs its own.
	d := start("d", 8)
	time.Sleep(2 * time.Second)
	if got := tr.counts("d"); got[0] != 0 {
		t.Errorf("d runs %d shards while c, older, runs another number", got[0])
	}
	c.stop(t)
	until("d runs its eight shards", is([]string{"d"}, 8))
	d.stop(t)

	var leases coordinationv1.LeaseList
	if err := base.List(context.Background(), &leases, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Items {
		if l.Labels[shard.LeaseKindLabel] == "member" {
			t.Errorf("member lease %s left after every replica stopped", l.Name)
		}
		if h := l.Spec.HolderIdentity; h != nil && *h != "" && *h != "b" {
			t.Errorf("lease %s still held by %s after it stopped", l.Name, *h)
		}
	}
}

// TestShardsSlowToStopRunNowhereElseMeanwhile: shard work that takes
// twice the Lease duration to end once stopped (an in-flight reconcile
// waiting on a backend). Replica a runs all four shards; b starts, and a
// hands two over; then a stops, and hands the other two over. No shard
// may run on both at once. A round used to wait for each shard it gave up
// in turn, renewing no other Lease meanwhile, so b took a's other shards
// (and the given ones) once their Leases expired while a still ran them;
// a replica stopping gave its shards up one after the other the same way.
func TestShardsSlowToStopRunNowhereElseMeanwhile(t *testing.T) {
	c := leaseClient(t)
	const lease = 3 * time.Second
	tr := &tracker{t: t, running: map[int]string{}, stopping: 2 * lease}
	start := func(id string) *replica {
		return startReplica(&shard.Assigner{
			Client: c, Namespace: "default", Name: "buckety-controller.buckety.yolean.se", Identity: id, Shards: 4,
			LeaseDuration: lease, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond,
			Run: tr.run(id), Log: zap.New(zap.UseDevMode(true)).WithName(id),
		})
	}
	a := start("a")
	tr.until(t, "a runs every shard", "[4]", "a")
	b := start("b")
	defer b.stop(t)
	tr.until(t, "a and b run two shards each", "[2 2]", "a", "b")
	at := time.Now()
	a.stop(t)
	t.Logf("a stopped in %s, its shards' work taking %s each to end", time.Since(at).Round(time.Millisecond), 2*lease)
	tr.until(t, "b runs every shard", "[0 4]", "a", "b")
	tr.mu.Lock()
	starts := tr.starts
	tr.mu.Unlock()
	if starts != 8 {
		t.Errorf("want 8 shard runs (four on a, two moved to b, then two more), got %d", starts)
	}
}

// TestReplicasStartingTogetherMoveNoShard: four replicas started within a
// round of each other (a Deployment scaled up from zero), 100 ms apart,
// end with a shard each, and no shard's work is started twice: a replica
// takes one shard per round, so the first does not take every free shard
// before it sees the others, only to give them up again after its caches
// re-checked their objects (it did, 3 moves).
func TestReplicasStartingTogetherMoveNoShard(t *testing.T) {
	c := leaseClient(t)
	tr := &tracker{t: t, running: map[int]string{}}
	ids := []string{"a", "b", "c", "d"}
	var rs []*replica
	for _, id := range ids {
		a := &shard.Assigner{
			Client: c, Namespace: "default", Name: "buckety-controller.buckety.yolean.se", Identity: id, Shards: 4,
			LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second,
			Run: tr.run(id), Log: zap.New(zap.UseDevMode(true)).WithName(id),
		}
		r := startReplica(a)
		rs = append(rs, r)
		time.Sleep(100 * time.Millisecond)
	}
	defer func() {
		for _, r := range rs {
			r.stop(t)
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for fmt.Sprint(tr.counts(ids...)) != "[1 1 1 1]" {
		if time.Now().After(deadline) {
			t.Fatalf("four replicas: want a shard each, got %v", tr.counts(ids...))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A few more rounds: nothing moves once split.
	time.Sleep(3 * time.Second)
	tr.mu.Lock()
	starts := tr.starts
	tr.mu.Unlock()
	if got := tr.counts(ids...); fmt.Sprint(got) != "[1 1 1 1]" || starts != 4 {
		t.Fatalf("four replicas started together: want a shard each and 4 shard runs started, got %v and %d (%d moves)", got, starts, starts-4)
	}
}

// TestRenewalWhoseAnswerIsLostKeepsTheShard: an API server too busy to
// answer in time still carries out a renewal, so the next one, sent with
// the old resourceVersion, is refused as a conflict. The Lease is then
// read again: it is still this replica's, renewed by the renewal whose
// answer was lost, so the shard is kept. The 100,000 run lost shards six
// times when renewals were answered late for longer than the renew
// deadline.
func TestRenewalWhoseAnswerIsLostKeepsTheShard(t *testing.T) {
	shardKeptThrough(t, "renewals carried out but answered late", func(ctx context.Context, c client.WithWatch, l *coordinationv1.Lease, opts ...client.UpdateOption) error {
		if err := c.Update(ctx, l, opts...); err != nil {
			return err
		}
		return fmt.Errorf("update lease %s: %w", l.Name, context.DeadlineExceeded)
	})
}

// TestTakeWhoseAnswerIsLostIsTakenAtOnce: the API server carries out a
// replica's take (the shard Lease's create) but answers too late, a
// timeout; the Lease names the replica, which does not run the shard. The
// replica takes it the next rounds as its own (a renewal: the lost take's
// acquireTime kept), where before it waited for the Lease to expire and
// took it over from itself (a new acquireTime) a Lease duration later, the
// shard unserved meanwhile.
func TestTakeWhoseAnswerIsLostIsTakenAtOnce(t *testing.T) {
	base := leaseClient(t)
	var lost atomic.Int32
	var acquired atomic.Value
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			l, ok := obj.(*coordinationv1.Lease)
			if !ok || l.Labels[shard.LeaseKindLabel] != "shard" || lost.Load() > 0 {
				return c.Create(ctx, obj, opts...)
			}
			if err := c.Create(ctx, l, opts...); err != nil {
				return err
			}
			acquired.Store(l.Spec.AcquireTime.Time)
			lost.Add(1)
			return fmt.Errorf("create lease %s: %w", l.Name, context.DeadlineExceeded)
		},
	})
	a, tr := oneShardReplica(t, c)
	r := startReplica(a)
	defer r.stop(t)
	if err := oneShardHeld(tr, time.Now().Add(60*time.Second)); err != nil {
		t.Fatal(err)
	}
	if lost.Load() != 1 {
		t.Fatalf("want the first take's answer lost, lost %d", lost.Load())
	}
	l := &coordinationv1.Lease{}
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: a.Namespace, Name: a.LeaseName(0)}, l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "a" {
		t.Fatalf("want the Lease held by a, got %v", l.Spec.HolderIdentity)
	}
	// Taken as its own, the Lease keeps the lost take's acquireTime; taken
	// over once expired, it would have a new one.
	if first := acquired.Load().(time.Time); l.Spec.AcquireTime == nil || !l.Spec.AcquireTime.Time.Equal(first) {
		t.Errorf("want the shard taken as the replica's own (acquired %s, by the lost take), got acquireTime %v: it expired and was taken over", first, l.Spec.AcquireTime)
	}
	if l.Spec.LeaseTransitions != nil && *l.Spec.LeaseTransitions != 0 {
		t.Errorf("want no transition, got %d", *l.Spec.LeaseTransitions)
	}
}

// TestSlowRenewalKeepsTheShard: a renewal answered after the round's
// period renews the Lease as long as it is answered by the renew deadline
// counted from the last renewal sent (1.5 s answers keep a 6 s deadline
// with rounds of 1 s); it used to be cut off at the round's period, and
// the shard lost at the deadline.
func TestSlowRenewalKeepsTheShard(t *testing.T) {
	shardKeptThrough(t, "renewals answered after 1.5 s (round 1 s, renew deadline 6 s)", func(ctx context.Context, c client.WithWatch, l *coordinationv1.Lease, opts ...client.UpdateOption) error {
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		return c.Update(ctx, l, opts...)
	})
}

// shardKeptThrough runs one replica of one shard on a control plane of its
// own, sends its shard-Lease updates through update for three renew
// deadlines, and checks that the shard was kept throughout (one run
// started) while its Lease was renewed, and that update was used at least
// 3 times.
func shardKeptThrough(t *testing.T, what string, update func(ctx context.Context, c client.WithWatch, l *coordinationv1.Lease, opts ...client.UpdateOption) error) {
	t.Helper()
	base := leaseClient(t)
	var on atomic.Bool
	var used atomic.Int32
	c := interceptor.NewClient(base, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if l, ok := obj.(*coordinationv1.Lease); ok && on.Load() && l.Labels[shard.LeaseKindLabel] == "shard" {
				used.Add(1)
				return update(ctx, c, l, opts...)
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	a, tr := oneShardReplica(t, c)
	r := startReplica(a)
	defer r.stop(t)
	if err := oneShardHeld(tr, time.Now().Add(60*time.Second)); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "default", Name: a.LeaseName(0)}
	renewTime := func() time.Time {
		var l coordinationv1.Lease
		if err := base.Get(context.Background(), key, &l); err != nil {
			t.Fatal(err)
		}
		if l.Spec.RenewTime == nil {
			t.Fatalf("lease %s has no renewTime", key.Name)
		}
		return l.Spec.RenewTime.Time
	}
	before := renewTime()
	on.Store(true)
	time.Sleep(3 * a.RenewDeadline)
	on.Store(false)
	time.Sleep(2 * a.RetryPeriod)
	if n := used.Load(); n < 3 {
		t.Fatalf("%s: want at least 3 such renewals, got %d", what, n)
	}
	if after := renewTime(); !after.After(before.Add(2 * a.RenewDeadline)) {
		t.Fatalf("%s: the lease was not renewed meanwhile: renewTime %s before, %s after", what, before, after)
	}
	tr.mu.Lock()
	starts := tr.starts
	tr.mu.Unlock()
	if got := tr.counts("a"); fmt.Sprint(got) != "[1]" || starts != 1 {
		t.Fatalf("%s: want the shard kept (1 run started), got %v and %d runs started", what, got, starts)
	}
}

// oneShardReplica is replica "a" of an installation of one shard, its
// Leases read and written through c, and the tracker of its shard's runs.
func oneShardReplica(t *testing.T, c client.Client) (*shard.Assigner, *tracker) {
	tr := &tracker{t: t, running: map[int]string{}}
	return &shard.Assigner{
		Client: c, Namespace: "default", Name: "buckety-controller.buckety.yolean.se", Identity: "a", Shards: 1,
		LeaseDuration: 9 * time.Second, RenewDeadline: 6 * time.Second, RetryPeriod: time.Second,
		Run: tr.run("a"), Log: zap.New(zap.UseDevMode(true)).WithName("a"),
	}, tr
}

// heldByOneReplica runs one replica of one shard over c until it holds the
// shard (30 s at most), stops it, checks that it stopped cleanly, and
// returns an error if it never held the shard.
func heldByOneReplica(t *testing.T, c client.Client) error {
	t.Helper()
	a, tr := oneShardReplica(t, c)
	r := startReplica(a)
	err := oneShardHeld(tr, time.Now().Add(30*time.Second))
	r.cancel()
	if stopErr := <-r.done; stopErr != nil {
		t.Errorf("want a clean stop, got %v", stopErr)
	}
	return err
}

// oneShardHeld waits until deadline for replica "a" to run the one shard.
func oneShardHeld(tr *tracker, deadline time.Time) error {
	for fmt.Sprint(tr.counts("a")) != "[1]" {
		if time.Now().After(deadline) {
			return fmt.Errorf("want the one shard held, got %v", tr.counts("a"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// TestStopReleasesAShardWhoseLastRenewalWasNotAnswered: a replica whose
// last renewal the API server carried out but did not answer holds a copy
// of its Lease one resourceVersion behind; stopping, it still releases the
// Lease (no error, no holder), rather than failing on the conflict and
// leaving the shard to wait for the Lease's expiry.
func TestStopReleasesAShardWhoseLastRenewalWasNotAnswered(t *testing.T) {
	base := leaseClient(t)
	var on atomic.Bool
	var lost atomic.Int32
	c := interceptor.NewClient(base, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			l, ok := obj.(*coordinationv1.Lease)
			if !ok || !on.Load() || l.Labels[shard.LeaseKindLabel] != "shard" {
				return c.Update(ctx, obj, opts...)
			}
			if err := c.Update(ctx, l, opts...); err != nil {
				return err
			}
			lost.Add(1)
			return fmt.Errorf("update lease %s: %w", l.Name, context.DeadlineExceeded)
		},
	})
	a, tr := oneShardReplica(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	if err := oneShardHeld(tr, deadline); err != nil {
		cancel()
		t.Fatal(err)
	}
	on.Store(true)
	for lost.Load() == 0 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("no renewal went through the interceptor")
		}
		time.Sleep(10 * time.Millisecond)
	}
	on.Store(false)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("want a clean stop, got %v", err)
	}
	var l coordinationv1.Lease
	if err := base.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: a.LeaseName(0)}, &l); err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h == nil || *h != "" {
		t.Errorf("want the Lease released (no holder), got holder %v", l.Spec.HolderIdentity)
	}
}

// TestFailedCountsAreLoggedOncePerStreak: a loaded API server fails the
// replicas' member Lease lists many rounds in a row. The replica keeps its
// shard and logs the streak twice, when it starts and when it ends with
// the number of rounds it lasted, not once a round (at 100,000 Bucketies
// that was about 280 lines an hour a replica).
func TestFailedCountsAreLoggedOncePerStreak(t *testing.T) {
	base := leaseClient(t)
	var on atomic.Bool
	var failed, listed atomic.Int32
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lo := &client.ListOptions{}
			lo.ApplyOptions(opts)
			member := lo.LabelSelector != nil && lo.LabelSelector.String() == shard.LeaseKindLabel+"=member"
			if member && on.Load() {
				failed.Add(1)
				return fmt.Errorf("list leases: %w", context.DeadlineExceeded)
			}
			if member {
				listed.Add(1)
			}
			return c.List(ctx, list, opts...)
		},
	})
	a, tr := oneShardReplica(t, c)
	var mu sync.Mutex
	var lines []string
	a.Log = funcr.New(func(prefix, args string) {
		mu.Lock()
		lines = append(lines, args)
		mu.Unlock()
	}, funcr.Options{})
	logged := func(msg string) []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, l := range lines {
			if strings.Contains(l, `"msg"="`+msg) {
				out = append(out, l)
			}
		}
		return out
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
	wait := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not by the deadline", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := oneShardHeld(tr, deadline); err != nil {
		t.Fatal(err)
	}
	on.Store(true)
	wait("three failed counts", func() bool { return failed.Load() >= 3 })
	on.Store(false)
	after := listed.Load()
	wait("a count after the failures", func() bool { return listed.Load() > after })
	wait("the streak's end logged", func() bool { return len(logged("counted the replicas again")) > 0 })
	if got := tr.counts("a"); fmt.Sprint(got) != "[1]" {
		t.Errorf("want the shard still held through the failed counts, got %v", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("want a clean stop, got %v", err)
	}
	starts, ends := logged("could not count the replicas"), logged("counted the replicas again")
	if len(starts) != 1 || len(ends) != 1 {
		t.Fatalf("want the streak of %d failed counts logged once as it started and once as it ended, got %d and %d lines:\n%s",
			failed.Load(), len(starts), len(ends), strings.Join(append(starts, ends...), "\n"))
	}
	if want := fmt.Sprintf(`"roundsFailed"=%d`, failed.Load()); !strings.Contains(ends[0], want) {
		t.Errorf("want the streak's end to say %s, got %s", want, ends[0])
	}
}

// TestTakesWhileConsistentListsAreSlow: on an API server busy with writes,
// a consistent list (no resourceVersion) waits until the watch cache has
// seen etcd's newest revision, longer than a round's deadline; here every
// such Lease list is held that long. The replica still counts the others
// and takes its shard: its Lease lists are served from the watch cache
// (fromWatchCache), which answers at once. Before, it counted
// nothing and took nothing for as long as the API server stayed busy.
func TestTakesWhileConsistentListsAreSlow(t *testing.T) {
	base := leaseClient(t)
	var slowed, cached atomic.Int32
	c := interceptor.NewClient(base, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*coordinationv1.LeaseList); ok {
				lo := (&client.ListOptions{}).ApplyOptions(opts)
				if lo.Raw == nil || lo.Raw.ResourceVersion != "0" {
					slowed.Add(1)
					// A consistent read's wait, past the round's deadline.
					<-ctx.Done()
					return ctx.Err()
				}
				cached.Add(1)
			}
			return c.List(ctx, list, opts...)
		},
	})
	if err := heldByOneReplica(t, c); err != nil {
		t.Fatalf("%v (Lease lists from the watch cache %d, consistent ones held past the deadline %d)", err, cached.Load(), slowed.Load())
	}
	if slowed.Load() != 0 || cached.Load() == 0 {
		t.Errorf("want every Lease list served from the watch cache, got %d from it and %d consistent", cached.Load(), slowed.Load())
	}
}

// TestCountsWhileMemberLeasesAreSlow: every request on a member Lease (the
// replica's own update, the list of the others) answers one and a half
// rounds late, as an API server holding 100,000 objects under a write load
// did; the replica still counts the replicas, and takes its shard. Counted
// inside the round, with the round's deadline, it counted nothing and took
// nothing.
func TestCountsWhileMemberLeasesAreSlow(t *testing.T) {
	base := leaseClient(t)
	var slowed atomic.Int32
	late := func(ctx context.Context) error {
		slowed.Add(1)
		select {
		case <-time.After(1500 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	member := func(name string) bool { return strings.Contains(name, "-member-") }
	c := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok && member(key.Name) {
				if err := late(ctx); err != nil {
					return err
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*coordinationv1.Lease); ok && member(obj.GetName()) {
				if err := late(ctx); err != nil {
					return err
				}
			}
			return c.Update(ctx, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*coordinationv1.LeaseList); ok {
				lo := (&client.ListOptions{}).ApplyOptions(opts)
				if lo.LabelSelector != nil && lo.LabelSelector.Matches(labels.Set{shard.LeaseKindLabel: "member"}) {
					if err := late(ctx); err != nil {
						return err
					}
				}
			}
			return c.List(ctx, list, opts...)
		},
	})
	if err := heldByOneReplica(t, c); err != nil {
		t.Fatalf("%v (member Lease requests answered late: %d)", err, slowed.Load())
	}
	if slowed.Load() == 0 {
		t.Error("want the member Lease requests slowed, saw none")
	}
}

// TestSettledReplicaTakesADeadReplicasShardsInOneRound: two replicas split
// eight shards; one is cut off from the API server (a crash), and once its
// Leases expire the other, running for longer than a Lease duration,
// takes all four in one round rather than one a round (four rounds of a
// second here). Before, the dead replica's last shard waited three
// rounds more than its first.
func TestSettledReplicaTakesADeadReplicasShardsInOneRound(t *testing.T) {
	base := leaseClient(t)
	tr := &tracker{t: t, running: map[int]string{}}
	var off atomic.Bool
	cutOff := func(id string) func() error {
		return func() error {
			if id == "b" && off.Load() {
				return errors.New("cut off from the API server")
			}
			return nil
		}
	}
	var mu sync.Mutex
	startedAt := map[int]time.Time{}
	var rs []*replica
	for _, id := range []string{"a", "b"} {
		fail := cutOff(id)
		c := failingClient(base, fail)
		run := tr.run(id)
		a := &shard.Assigner{
			Client: c, Namespace: "default", Name: "buckety-controller.buckety.yolean.se", Identity: id, Shards: 8,
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second,
			Run: func(ctx context.Context, k int) error {
				if id == "a" {
					mu.Lock()
					startedAt[k] = time.Now()
					mu.Unlock()
				}
				return run(ctx, k)
			},
			Log: zap.New(zap.UseDevMode(true)).WithName(id),
		}
		r := startReplica(a)
		rs = append(rs, r)
	}
	defer func() {
		for _, r := range rs {
			r.stop(t)
		}
	}()
	until := func(what string, want string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for fmt.Sprint(tr.counts("a", "b")) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 90s; running %v", what, tr.counts("a", "b"))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	until("two replicas run four shards each", "[4 4]")
	// Both have run for longer than a Lease duration.
	time.Sleep(3 * time.Second)
	off.Store(true)
	until("a runs b's four shards too", "[0 8]")
	mu.Lock()
	defer mu.Unlock()
	var taken []time.Time
	for _, at := range startedAt {
		taken = append(taken, at)
	}
	sort.Slice(taken, func(i, j int) bool { return taken[i].Before(taken[j]) })
	if len(taken) != 8 {
		t.Fatalf("want a to have started 8 shard runs, got %d", len(taken))
	}
	// a's last four runs started are b's shards. Taken one a round, they
	// would span at least three rounds, each at least RetryPeriod (1 s)
	// after the last ends; taken in one round, they span what b's four
	// renewals before the cut did (each Lease expires a Lease duration
	// after its own last renewal, and a takes a warmed shard as its Lease
	// expires), milliseconds on an idle machine, 1.15 s once in a CI run
	// on a loaded one. The bound tells the two apart, not the machine's
	// speed.
	if spread := taken[7].Sub(taken[4]); spread >= 5*time.Second/2 {
		t.Errorf("want b's four shards taken in one round, got them over %s (one a round takes at least 3 s: three rounds a second apart)", spread.Round(time.Millisecond))
	}
}

// warmLog records the Warm calls and shard runs of several replicas.
type warmLog struct {
	mu sync.Mutex
	// warms are the Warm calls, in order.
	warms []*warmCall
	// runs are when each replica began each shard's run.
	runs map[string]map[int]time.Time
}

type warmCall struct {
	id    string
	k     int
	at    time.Time
	ended atomic.Bool
	// liveAtRun: the call's context had not ended when id's run of k
	// began.
	liveAtRun bool
	ctx       context.Context
}

func (w *warmLog) warm(id string) func(context.Context, int) {
	return func(ctx context.Context, k int) {
		c := &warmCall{id: id, k: k, at: time.Now(), ctx: ctx}
		w.mu.Lock()
		w.warms = append(w.warms, c)
		w.mu.Unlock()
		go func() {
			<-ctx.Done()
			c.ended.Store(true)
		}()
	}
}

func (w *warmLog) ran(id string, k int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs[id] == nil {
		w.runs[id] = map[int]time.Time{}
	}
	w.runs[id][k] = time.Now()
	for _, c := range w.warms {
		if c.id == id && c.k == k && c.ctx.Err() == nil {
			c.liveAtRun = true
		}
	}
}

// threeReplicas starts replicas a, b and c of six shards, with Lease
// duration lease (renew deadline 2 s, a round a second): b on client bc,
// the others on base. started, if not nil, is told of each shard run as
// it begins; with wl, their warms are logged there. Those not stopped
// already stop when the test ends.
func threeReplicas(t *testing.T, tr *tracker, base, bc client.Client, lease time.Duration, started func(id string, k int), wl *warmLog) []*replica {
	t.Helper()
	var rs []*replica
	for _, id := range []string{"a", "b", "c"} {
		c := base
		if id == "b" {
			c = bc
		}
		run := tr.run(id)
		a := &shard.Assigner{
			Client: c, Namespace: "default", Name: "buckety-controller.buckety.yolean.se", Identity: id, Shards: 6,
			LeaseDuration: lease, RenewDeadline: 2 * time.Second, RetryPeriod: time.Second,
			Run: func(ctx context.Context, k int) error {
				if started != nil {
					started(id, k)
				}
				return run(ctx, k)
			},
			Log: zap.New(zap.UseDevMode(true)).WithName(id),
		}
		if wl != nil {
			a.Warm = wl.warm(id)
		}
		rs = append(rs, startReplica(a))
	}
	t.Cleanup(func() {
		for _, r := range rs {
			r.stop(t)
		}
	})
	return rs
}

// A replica cut off from the API server stops renewing its shards' Leases;
// the others see them unchanged for RenewDeadline, and one replica per
// shard (split so each ends with its share) warms it before the Lease
// expires, then takes it, its warm still live for the run to take
// over. The other replicas leave it to the warmer. A warm of a shard that
// is not taken ends.
func TestDeadReplicasShardsAreWarmedAndTakenByTheirWarmer(t *testing.T) {
	base := leaseClient(t)
	tr := &tracker{t: t, running: map[int]string{}}
	wl := &warmLog{runs: map[string]map[int]time.Time{}}
	var off atomic.Bool
	ids := []string{"a", "b", "c"}
	warmsTaken := counterValue(t, shard.Warms.WithLabelValues(shard.WarmTaken))
	bClient := failingClient(base, func() error {
		if off.Load() {
			return errors.New("cut off from the API server")
		}
		return nil
	})
	rs := threeReplicas(t, tr, base, bClient, 4*time.Second, wl.ran, wl)
	until := func(what string, want string) { tr.until(t, what, want, ids...) }
	until("three replicas run two shards each", "[2 2 2]")
	// Every replica has run for longer than a Lease duration.
	time.Sleep(5 * time.Second)
	bs := tr.runBy("b")
	wl.mu.Lock()
	before := len(wl.warms)
	wl.mu.Unlock()
	t.Logf("warms while every holder renewed: %d", before)
	off.Store(true)
	until("a and c run b's shards", "[0 3 3]")
	wl.mu.Lock()
	for _, k := range bs {
		var taker string
		for _, id := range []string{"a", "c"} {
			if _, ok := wl.runs[id][k]; ok {
				taker = id
			}
		}
		var calls []*warmCall
		for _, c := range wl.warms[before:] {
			if c.k == k {
				calls = append(calls, c)
			}
		}
		if len(calls) != 1 {
			t.Errorf("shard %d: want one replica to warm it, got %d warms", k, len(calls))
			continue
		}
		c := calls[0]
		if c.id != taker {
			t.Errorf("shard %d: warmed by %s, taken by %s", k, c.id, taker)
		}
		if !c.at.Before(wl.runs[taker][k]) || !c.liveAtRun {
			t.Errorf("shard %d: want its warm begun before %s's run and live when the run began (begun %s before, live %v)",
				k, taker, wl.runs[taker][k].Sub(c.at), c.liveAtRun)
		}
		if c.ended.Load() {
			t.Errorf("shard %d: its warm ended while %s runs it", k, taker)
		}
	}
	// a and c hold two shards each: b's two are split between them.
	by := map[string]int{}
	for _, c := range wl.warms[before:] {
		by[c.id]++
	}
	if by["a"] != 1 || by["c"] != 1 {
		t.Errorf("want b's shards warmed one by a and one by c, got %v", by)
	}
	if got := counterValue(t, shard.Warms.WithLabelValues(shard.WarmTaken)) - warmsTaken; got != 2 {
		t.Errorf("buckety_shard_warms_total{outcome=taken} rose by %v, want 2", got)
	}
	wl.mu.Unlock()
	// Every warm but those of the shards their warmer runs has ended; and
	// once the replicas stop, those end too.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var live []string
		wl.mu.Lock()
		for _, c := range wl.warms {
			if _, runs := wl.runs[c.id][c.k]; !c.ended.Load() && !(runs && c.liveAtRun) {
				live = append(live, fmt.Sprintf("%s:%d", c.id, c.k))
			}
		}
		wl.mu.Unlock()
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("warms not taken still live after 30s: %v", live)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rs[0].stop(t)
	rs[2].stop(t)
	wl.mu.Lock()
	defer wl.mu.Unlock()
	for _, c := range wl.warms {
		if !c.ended.Load() {
			t.Errorf("%s's warm of shard %d still live after it stopped", c.id, c.k)
		}
	}
}

// A replica cut off from the API server whose member Lease outlives its
// shards' Leases (it is renewed on a goroutine of its own, so it may
// expire a round later; here it is written to last ten minutes) is
// counted gone once that member Lease is quiet and a shard Lease of it has
// expired: the others take its shards. Counted live until its member
// Lease expired, it would keep them at their share of three replicas, and
// its shards served by none, until then.
func TestGoneReplicasMemberLeaseDoesNotHoldBackTheTakes(t *testing.T) {
	base := leaseClient(t)
	tr := &tracker{t: t, running: map[int]string{}}
	var off atomic.Bool
	long := int32(600)
	outlive := func(obj client.Object) {
		if l, ok := obj.(*coordinationv1.Lease); ok && strings.Contains(l.Name, "-member-") {
			l.Spec.LeaseDurationSeconds = &long
		}
	}
	bClient := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			outlive(obj)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if off.Load() {
				return errors.New("cut off from the API server")
			}
			outlive(obj)
			return c.Update(ctx, obj, opts...)
		},
	})
	ids := []string{"a", "b", "c"}
	threeReplicas(t, tr, base, bClient, 4*time.Second, nil, nil)
	tr.until(t, "three replicas run two shards each", "[2 2 2]", ids...)
	time.Sleep(5 * time.Second)
	off.Store(true)
	tr.until(t, "a and c run b's shards while b's member Lease has not expired", "[0 3 3]", ids...)
}

// A live replica whose shard renewals stall while its member Lease is
// renewed (one listing a shard on starved cores) loses its shards by the
// renew deadline, and they expire; the others, each at its share, cannot
// take them, so none warms them (a warm it could not take would only list
// a shard's objects for nothing). Once the replica's renewals come
// through again it takes its shards back.
func TestStalledHoldersShardsAreNotWarmedByReplicasAtTheirShare(t *testing.T) {
	base := leaseClient(t)
	tr := &tracker{t: t, running: map[int]string{}}
	wl := &warmLog{runs: map[string]map[int]time.Time{}}
	var stalled atomic.Bool
	renewals := &renewalLog{}
	bClient := interceptor.NewClient(base, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			member := strings.Contains(obj.GetName(), "-member-")
			if stalled.Load() && !member {
				return errors.New("the API server did not answer in time")
			}
			began := time.Now()
			err := c.Update(ctx, obj, opts...)
			if member && err == nil {
				renewals.add(began, time.Now())
			}
			return err
		},
	})
	ids := []string{"a", "b", "c"}
	threeReplicas(t, tr, base, bClient, 4*time.Second, wl.ran, wl)
	tr.until(t, "three replicas run two shards each", "[2 2 2]", ids...)
	time.Sleep(5 * time.Second)
	wl.mu.Lock()
	before := len(wl.warms)
	wl.mu.Unlock()
	stalled.Store(true)
	tr.until(t, "b stops its shards' work", "[0 2 2]", ids...)
	// Past its shards' expiry, and two rounds more.
	time.Sleep(7 * time.Second)
	if got := tr.counts(ids...); fmt.Sprint(got) != "[0 2 2]" {
		t.Errorf("while b stalls: want a and c at their share of two, got %v", got)
	}
	wl.mu.Lock()
	for _, c := range wl.warms[before:] {
		// A warm is by the rule when b's member Lease may have gone
		// unrenewed for quietAfter (2 s here, less a quarter second for
		// a read from the watch cache behind) before it: on a loaded
		// machine b's own count can be that late.
		if gap := renewals.longestGapBefore(c.at); gap >= 1750*time.Millisecond {
			t.Logf("%s warmed shard %d after b's member Lease may have gone unrenewed for %s: a silent holder's, by the rule", c.id, c.k, gap)
			continue
		}
		t.Errorf("%s warmed shard %d of a holder whose member Lease is renewed, at its share", c.id, c.k)
	}
	wl.mu.Unlock()
	stalled.Store(false)
	tr.until(t, "b takes its shards back", "[2 2 2]", ids...)
}

// renewalLog is when a replica's member Lease updates began and returned.
type renewalLog struct {
	mu    sync.Mutex
	spans [][2]time.Time
}

func (r *renewalLog) add(began, returned time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spans = append(r.spans, [2]time.Time{began, returned})
}

// longestGapBefore is the longest the member Lease may have gone unchanged
// in the Lease duration (4 s) before t, by its updates that succeeded: each
// was written between its beginning and its return, so two in a row are
// at most the later one's return less the earlier one's beginning apart.
// (The warmers are named by a count at most a Lease duration old.)
func (r *renewalLog) longestGapBefore(t time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var longest time.Duration
	for i, s := range r.spans {
		if !s[0].Before(t) {
			break
		}
		end := t
		if i+1 < len(r.spans) && r.spans[i+1][1].Before(t) {
			end = r.spans[i+1][1]
		}
		if end.After(t.Add(-4 * time.Second)) {
			longest = max(longest, end.Sub(s[0]))
		}
	}
	return longest
}
