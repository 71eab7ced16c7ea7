package shard

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const testLeaseName = "buckety-controller.buckety.yolean.se"

// fakeLeases is a fake API server's Leases in namespace ns, on a clock the
// test moves.
type fakeLeases struct {
	t   *testing.T
	c   client.Client
	now time.Time
}

func newFakeLeases(t *testing.T) *fakeLeases {
	t.Helper()
	s := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return &fakeLeases{t: t, c: fake.NewClientBuilder().WithScheme(s).Build(), now: time.Unix(1_700_000_000, 0)}
}

// hold writes Lease name held by id (a create, or a renewal that changes
// its record), labelled and annotated as given.
func (f *fakeLeases) hold(name, id string, labels, annotations map[string]string) {
	f.t.Helper()
	ctx := context.Background()
	now := metav1.NewMicroTime(f.now)
	secs := int32(15)
	spec := coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
	l := &coordinationv1.Lease{}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, l); err != nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels, Annotations: annotations}, Spec: spec}
		if err := f.c.Create(ctx, l); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	l.Spec = spec
	if err := f.c.Update(ctx, l); err != nil {
		f.t.Fatal(err)
	}
}

// holder is Lease name's holder ("" if released or absent).
func (f *fakeLeases) holder(name string) string {
	l := &coordinationv1.Lease{}
	if err := f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// singleLeader is a controller-runtime leader election identity.
const singleLeader = "buckety-controller-5d9c7_0f7a3c1e-8d2b-4c55-a1a4-77e2b3c9d001"

// roundsAssigner is an Assigner of four shards over f's Leases, driven
// round by round (count, step) on f's clock; its shards' work runs until
// given back.
func roundsAssigner(t *testing.T, f *fakeLeases, id string) (*Assigner, *sync.Map) {
	t.Helper()
	var running sync.Map
	a := &Assigner{
		Client: f.c, Namespace: "ns", Name: testLeaseName, Identity: id, Shards: 4,
		Now: func() time.Time { return f.now },
		Run: func(ctx context.Context, k int) error {
			running.Store(k, true)
			<-ctx.Done()
			running.Delete(k)
			return nil
		},
		Log: logr.Discard(),
	}
	if err := a.defaults(); err != nil {
		t.Fatal(err)
	}
	a.started = f.now
	return a, &running
}

// round is one of a's rounds, the clock then moved a round on.
func (f *fakeLeases) round(a *Assigner) {
	ctx := context.Background()
	a.countOnce(ctx)
	a.step(ctx)
	// The work given back ends at once; let it.
	time.Sleep(5 * time.Millisecond)
	f.now = f.now.Add(a.RetryPeriod)
}

// A replica with shards beside a single leader (--shards 1, or a release
// before shards: shard 0's Lease is its leader election Lease, and it
// writes no member Lease) takes none of them while the leader holds that
// Lease: the leader runs every shard. Before, it counted only itself and
// took shards 1 to 3.
func TestShardedReplicaYieldsToASingleLeader(t *testing.T) {
	f := newFakeLeases(t)
	f.hold(testLeaseName, singleLeader, nil, nil)
	a, _ := roundsAssigner(t, f, "buckety-controller-7f8b9-ab12cd34")
	for i := 0; i < 40; i++ { // 80 s: over five Lease durations
		f.hold(testLeaseName, singleLeader, nil, nil)
		f.round(a)
		if held := a.Held(); len(held) > 0 {
			t.Fatalf("round %d: holds %v while the single leader holds shard 0's lease", i, held)
		}
	}
	for k := 1; k < 4; k++ {
		if h := f.holder(a.LeaseName(k)); h != "" {
			t.Errorf("shard %d's lease held by %q while the single leader runs", k, h)
		}
	}
	// The leader stops and releases its Lease: the shards are taken.
	f.hold(testLeaseName, "", nil, nil)
	for i := 0; i < 10 && len(a.Held()) < 4; i++ {
		f.round(a)
	}
	if held := a.Held(); len(held) != 4 {
		t.Fatalf("holds %v once the single leader released its lease; want every shard", held)
	}
}

// A single leader that takes shard 0's Lease while a replica runs other
// shards (an earlier release rolled back to, which does not wait for the
// sharded replicas) has them given back: their work stops and their Leases
// are released.
func TestShardedReplicaHandsBackItsShardsToASingleLeader(t *testing.T) {
	f := newFakeLeases(t)
	// Replica b, of four shards, holds shard 0.
	b := "buckety-controller-7f8b9-bbbbbbbb"
	member := map[string]string{LeaseKindLabel: "member"}
	fours := map[string]string{ShardsAnnotation: "4"}
	f.hold(testLeaseName, b, map[string]string{LeaseKindLabel: "shard"}, nil)
	f.hold(testLeaseName+"-member-"+b, b, member, fours)
	a, running := roundsAssigner(t, f, "buckety-controller-7f8b9-aaaaaaaa")
	for i := 0; i < 10; i++ {
		f.hold(testLeaseName, b, nil, nil)
		f.hold(testLeaseName+"-member-"+b, b, nil, nil)
		f.round(a)
	}
	if held := a.Held(); len(held) != 2 {
		t.Fatalf("holds %v beside b; want two shards", held)
	}
	// b is gone, and a single leader holds shard 0's Lease.
	if err := f.c.Delete(context.Background(), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: testLeaseName + "-member-" + b}}); err != nil {
		t.Fatal(err)
	}
	f.hold(testLeaseName, singleLeader, nil, nil)
	for i := 0; i < 3; i++ {
		f.hold(testLeaseName, singleLeader, nil, nil)
		f.round(a)
	}
	if held := a.Held(); len(held) > 0 {
		t.Fatalf("holds %v beside the single leader", held)
	}
	running.Range(func(k, _ any) bool {
		t.Errorf("shard %v still runs beside the single leader", k)
		return true
	})
	for k := 1; k < 4; k++ {
		if h := f.holder(a.LeaseName(k)); h != "" {
			t.Errorf("shard %d's lease still held by %q", k, h)
		}
	}
}

// fakeLock is a Lease lock that records its writes.
type fakeLock struct {
	writes []resourcelock.LeaderElectionRecord
}

func (l *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return &resourcelock.LeaderElectionRecord{}, nil, nil
}

func (l *fakeLock) Create(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.writes = append(l.writes, ler)
	return nil
}

func (l *fakeLock) Update(_ context.Context, ler resourcelock.LeaderElectionRecord) error {
	l.writes = append(l.writes, ler)
	return nil
}

func (l *fakeLock) RecordEvent(string)    {}
func (l *fakeLock) Identity() string      { return singleLeader }
func (l *fakeLock) Describe() string      { return "ns/" + testLeaseName }
func (l *fakeLock) ownWrites() int        { return len(l.writes) }
func (l *fakeLock) last() string          { return l.writes[len(l.writes)-1].HolderIdentity }
func (l *fakeLock) holderOf(i int) string { return l.writes[i].HolderIdentity }

// A single leader does not take its Lease while a replica running four
// shards renews its member Lease (a rollout turning shards off), and takes
// it once that member Lease has expired (deleting it) or gone; once it
// leads, its renewals do not wait.
func TestUnshardedLockWaitsForShardedReplicas(t *testing.T) {
	f := newFakeLeases(t)
	b := "buckety-controller-7f8b9-bbbbbbbb"
	member := testLeaseName + "-member-" + b
	f.hold(member, b, map[string]string{LeaseKindLabel: "member"}, map[string]string{ShardsAnnotation: "4"})
	// A replica without shards' member Lease (none is written, but one
	// annotated 1 would not run shards) and another Assigner's are not
	// waited for.
	f.hold(testLeaseName+"-member-one", "one", map[string]string{LeaseKindLabel: "member"}, map[string]string{ShardsAnnotation: "1"})
	f.hold("other-member-x", "x", map[string]string{LeaseKindLabel: "member"}, map[string]string{ShardsAnnotation: "4"})
	inner := &fakeLock{}
	u := &UnshardedLock{Interface: inner, Client: f.c, Namespace: "ns", Name: testLeaseName, LeaseDuration: 15 * time.Second, Log: logr.Discard(), Now: func() time.Time { return f.now }}
	ctx := context.Background()
	acquire := resourcelock.LeaderElectionRecord{HolderIdentity: singleLeader, LeaseDurationSeconds: 15}
	for i := 0; i < 40; i++ { // 80 s
		f.hold(member, b, nil, nil)
		if err := u.Update(ctx, acquire); err == nil {
			t.Fatalf("retry %d: took the lease while b runs shards", i)
		}
		if err := u.Create(ctx, acquire); err == nil {
			t.Fatalf("retry %d: created the lease while b runs shards", i)
		}
		f.now = f.now.Add(2 * time.Second)
	}
	// A release (of a lease held before) is not held back.
	if err := u.Update(ctx, resourcelock.LeaderElectionRecord{}); err != nil {
		t.Fatalf("release: %v", err)
	}
	if inner.ownWrites() != 1 || inner.last() != "" {
		t.Fatalf("wrote %d records, last holder %q; want the release only", inner.ownWrites(), inner.last())
	}
	// b stops renewing (it died): its member Lease expires a Lease
	// duration on.
	var err error
	for i := 0; i < 10; i++ {
		if err = u.Update(ctx, acquire); err == nil {
			break
		}
		f.now = f.now.Add(2 * time.Second)
	}
	if err != nil {
		t.Fatalf("not taken once b's member lease expired: %v", err)
	}
	if inner.holderOf(inner.ownWrites()-1) != singleLeader {
		t.Fatalf("last write names %q", inner.last())
	}
	if h := f.holder(member); h != "" {
		t.Errorf("b's expired member lease not deleted (held by %q)", h)
	}
	// Leading, its renewals pass whatever member Leases say.
	f.hold(member, b, map[string]string{LeaseKindLabel: "member"}, map[string]string{ShardsAnnotation: "4"})
	if err := u.Update(ctx, acquire); err != nil {
		t.Fatalf("renewal held back: %v", err)
	}
	sharded, err := u.ShardedReplicas(ctx)
	if err != nil || len(sharded) != 1 || sharded[0] != b {
		t.Fatalf("ShardedReplicas = %v, %v; want [%s]", sharded, err, b)
	}
}

// A replica with shards that stopped while shard 0's Lease still named it
// (its release failed, its member Lease deleted) is not taken for a single
// leader: its identity names a Lease, which controller-runtime's host_uuid
// never does. The others keep their shards and take the rest, where they
// handed back every shard until that Lease expired.
func TestShardedReplicaDoesNotYieldToAStoppedShardedHolder(t *testing.T) {
	f := newFakeLeases(t)
	f.hold(testLeaseName, "buckety-controller-1a2b3-gone", nil, nil)
	a, _ := roundsAssigner(t, f, "buckety-controller-7f8b9-ab12cd34")
	for i := 0; i < 6; i++ {
		f.round(a)
	}
	if held := a.Held(); len(held) != 3 {
		t.Fatalf("want shards 1 to 3 taken beside shard 0's unexpired Lease of a stopped replica with shards, got %v", held)
	}
}
