package shard

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leaseBoard is what replica a reads in its rounds: replicas a, b and c of
// six shards, two each, with their member Leases, on a clock the test
// moves. Each round every replica named renews its shard Leases, its
// member Lease, or both; a reads them all (as its round and its count
// do) and names the warmers.
type leaseBoard struct {
	a      *Assigner
	now    time.Time
	rv     int
	shards map[string]*coordinationv1.Lease // by name
	member map[string]*coordinationv1.Lease // by replica
	holder map[int]string
	// m is a's last count.
	m memberSet
}

func newLeaseBoard(t *testing.T) *leaseBoard {
	t.Helper()
	b := &leaseBoard{now: time.Unix(1_700_000_000, 0), shards: map[string]*coordinationv1.Lease{}, member: map[string]*coordinationv1.Lease{}, holder: map[int]string{}}
	b.a = &Assigner{Namespace: "ns", Name: "buckety", Identity: "a", Shards: 6, Now: func() time.Time { return b.now }}
	if err := b.a.defaults(); err != nil {
		t.Fatal(err)
	}
	for k, id := range []string{"a", "a", "b", "b", "c", "c"} {
		b.holder[k] = id
		b.shards[b.a.LeaseName(k)] = b.lease(b.a.LeaseName(k), id)
	}
	for _, id := range []string{"b", "c"} {
		b.member[id] = b.lease(b.a.memberNameOf(id), id)
	}
	b.read()
	return b
}

func (b *leaseBoard) lease(name, id string) *coordinationv1.Lease {
	b.rv++
	secs := int32(b.a.LeaseDuration / time.Second)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.a.Namespace, Name: name, ResourceVersion: strconv.Itoa(b.rv)},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs},
	}
}

// read is a's reading of every Lease (its round's list and its count's).
func (b *leaseBoard) read() {
	for _, l := range b.shards {
		b.a.unchangedFor(l)
	}
	for _, l := range b.member {
		b.a.unchangedFor(l)
	}
}

// round moves the clock by d; the replicas in shards renew their shard
// Leases, those in members their member Leases; a reads them and names
// the warmers, counting live every replica whose member Lease was not
// quiet at its last count (members), made on a goroutine of its own as
// the last round began.
func (b *leaseBoard) round(d time.Duration, shards, members []string) map[int]string {
	return b.roundCounted(d, shards, members, true)
}

// roundCounted is round, with a's count made (counted) or late: a late
// count reads no member Lease, and a names the warmers by the count
// before.
func (b *leaseBoard) roundCounted(d time.Duration, shards, members []string, counted bool) map[int]string {
	if counted {
		b.m = memberSet{peers: []string{"a", "b", "c"}}
		for id, l := range b.member {
			if b.a.unchangedFor(l) >= b.a.RenewDeadline {
				if b.m.quiet == nil {
					b.m.quiet = map[string]bool{}
				}
				b.m.quiet[id] = true
			}
		}
	}
	b.now = b.now.Add(d)
	for k, id := range b.holder {
		for _, r := range append([]string{"a"}, shards...) {
			if r == id {
				b.shards[b.a.LeaseName(k)] = b.lease(b.a.LeaseName(k), id)
			}
		}
	}
	for _, id := range members {
		b.member[id] = b.lease(b.a.memberNameOf(id), id)
	}
	for _, l := range b.shards {
		b.a.unchangedFor(l)
	}
	if counted {
		for _, l := range b.member {
			b.a.unchangedFor(l)
		}
	}
	return b.a.warmers(b.m, b.shards)
}

// A replica killed stops renewing its shard Leases and its member Lease
// at once. Once both have gone unchanged for half the renew deadline (5 s
// of the default 10), its shards are named to warm, split so each warmer
// has room to take one: before the renew deadline, so the warm has the
// Lease's last 10 s rather than 5 to fill the caches.
func TestWarmersNameAKilledReplicasShardsAtHalfTheRenewDeadline(t *testing.T) {
	b := newLeaseBoard(t)
	if q := b.a.quietAfter(); q != 5*time.Second {
		t.Fatalf("quietAfter with the default timings: want 5s, got %s", q)
	}
	for i := 1; i <= 2; i++ {
		if w := b.round(2*time.Second, []string{"c"}, []string{"c"}); len(w) != 0 {
			t.Errorf("b silent for %ds: want no warmers yet, got %v", 2*i, w)
		}
	}
	w := b.round(2*time.Second, []string{"c"}, []string{"c"})
	if got, want := fmt.Sprint(w), "map[2:a 3:c]"; got != want {
		t.Errorf("b silent for 6s, under the renew deadline (10s): want its shards warmed by a and c, %s, got %s", want, got)
	}
	// The same warmers every round until the Lease expires (15 s): past
	// the renew deadline too, before b's member Lease counts as quiet.
	for i := 4; i <= 7; i++ {
		if got, want := fmt.Sprint(b.round(2*time.Second, []string{"c"}, []string{"c"})), "map[2:a 3:c]"; got != want {
			t.Errorf("b silent for %ds: want the warmers kept, %s, got %s", 2*i, want, got)
		}
	}
}

// A live replica whose shard renewals stall while its member Lease is
// renewed (one listing a shard on starved cores) is not taken for gone
// at half the renew deadline: its shards are named only at the deadline,
// and then to no one, as every other replica is at its share.
func TestWarmersLeaveAStalledHolderWithALiveMemberLeaseAlone(t *testing.T) {
	b := newLeaseBoard(t)
	for i := 1; i <= 6; i++ {
		if w := b.round(2*time.Second, []string{"c"}, []string{"b", "c"}); len(w) != 0 {
			t.Errorf("b's shard Leases unchanged for %ds, its member Lease renewed: want no warmers, got %v", 2*i, w)
		}
	}
}

// A replica whose member Lease goes unrenewed while its shard Leases are
// renewed (its count's goroutine stuck) still serves its shards: nothing
// is warmed.
func TestWarmersLeaveAHolderRenewingItsShardsAlone(t *testing.T) {
	b := newLeaseBoard(t)
	for i := 1; i <= 4; i++ {
		if w := b.round(2*time.Second, []string{"b", "c"}, []string{"c"}); len(w) != 0 {
			t.Errorf("b's member Lease unchanged for %ds, its shard Leases renewed: want no warmers, got %v", 2*i, w)
		}
	}
}

// A count late on a's side (its own member Lease's update slow on a loaded
// API server) says nothing of b: b's member Lease, renewed at a's last
// count, is not taken for silent however long a's next count takes, so b's
// stalled shards are not warmed before the renew deadline. (Measured up to
// a's clock rather than its last read, b looked silent after 5 s and a,
// then below a share of three, warmed b's first shard: CI's failure of
// TestStalledHoldersShardsAreNotWarmedByReplicasAtTheirShare.)
func TestWarmersDoNotTakeALateCountForAPeersSilence(t *testing.T) {
	b := newLeaseBoard(t)
	if w := b.round(2*time.Second, []string{"c"}, []string{"b", "c"}); len(w) != 0 {
		t.Fatalf("b's shard Leases unchanged for 2s, its member Lease renewed: want no warmers, got %v", w)
	}
	for i := 2; i <= 4; i++ {
		if w := b.roundCounted(2*time.Second, []string{"c"}, []string{"b", "c"}, false); len(w) != 0 {
			t.Errorf("b's shard Leases unchanged for %ds, a's count late by %ds: want no warmers, got %v", 2*i, 2*(i-1), w)
		}
	}
}

// A departed replica's member Lease, no longer read (deleted), is
// forgotten ten Lease durations after its last read; the Leases still read
// are kept, however long unchanged.
func TestObservationsOfLeasesNoLongerReadAreForgotten(t *testing.T) {
	b := newLeaseBoard(t)
	gone := b.a.Namespace + "/" + b.a.memberNameOf("b")
	delete(b.member, "b")
	for elapsed := time.Duration(0); elapsed <= 10*b.a.LeaseDuration; elapsed += 2 * time.Second {
		b.round(2*time.Second, []string{"c"}, nil)
		b.a.forgetUnseen()
	}
	b.a.obsMu.Lock()
	_, kept := b.a.observed[gone]
	_, cKept := b.a.observed[b.a.Namespace+"/"+b.a.memberNameOf("c")]
	n := len(b.a.observed)
	b.a.obsMu.Unlock()
	if kept {
		t.Errorf("b's member Lease, unread for ten Lease durations: want its observation dropped, still held")
	}
	if !cKept {
		t.Errorf("c's member Lease, read every round though unchanged: want its observation kept")
	}
	if want := 6 + 1; n != want {
		t.Errorf("observations held: want %d (six shard Leases and c's member Lease), got %d", want, n)
	}
}
