package shard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and annotations on the Leases the Assigner writes.
const (
	// LeaseKindLabel tells shard Leases ("shard") from member Leases
	// ("member").
	LeaseKindLabel = "buckety.yolean.se/lease"
	// ShardsAnnotation is, on a member Lease, the number of shards the
	// replica runs with.
	ShardsAnnotation = "buckety.yolean.se/shards"
)

// Assigner takes and gives up shards for one replica (see the package
// documentation). Its zero timings are controller-runtime's leader
// election defaults.
type Assigner struct {
	// Client reads and writes Leases; it must not be a cache's.
	Client client.Client
	// Namespace holds the Leases.
	Namespace string
	// Name is shard 0's Lease (controller-runtime's leader election ID,
	// so one shard is the single leader of earlier releases); shard k's
	// is Name-k; a member's is Name-member-<identity>.
	Name string
	// Identity names this replica, unique among the replicas (the pod
	// name and a random suffix).
	Identity string
	// Shards is the installation's number of shards, 1 to Slots.
	Shards int
	// The Lease timings: a Lease not renewed for LeaseDuration may be
	// taken; a holder that could not renew for RenewDeadline stops the
	// shard's work; every RetryPeriod each Lease is renewed and the
	// shards are balanced.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Run runs shard k until ctx ends. The Assigner releases the shard's
	// Lease only after Run has returned. An error is logged, and the
	// shard is given up (and may be taken again, here or elsewhere).
	Run func(ctx context.Context, k int) error
	// Warm, when set, prepares shard k's work ahead of a take (its caches'
	// first lists): it is called for a shard whose holder looks gone (its
	// Lease not renewed for RenewDeadline, by which a live holder that
	// could not renew has stopped the shard's work; or that Lease and the
	// holder's member Lease both not renewed for half of it) and which
	// this replica is to take once the Lease expires (see warmers). ctx
	// ends when the shard is no longer to be taken here
	// (its holder renewed it, another replica took it, this one stops),
	// or, if this replica took it, once Run has returned: a Run started
	// while ctx lives may take over what Warm prepared. Warm returns at
	// once (it starts what it prepares, which ends with ctx), and a Run
	// of k started after it has returned finds what it began. Warm only
	// reads; the shard's work starts with Run alone.
	Warm func(ctx context.Context, k int)
	// Log logs takes, releases and losses.
	Log logr.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// AfterFunc calls f once d has passed on the clock Now reads, unless
	// the timer it returns is stopped first, as time.AfterFunc does (nil:
	// time.AfterFunc); never before it has returned, as the shards'
	// watchdogs it times (watchLocked) are armed under the lock f takes.
	// A shard is lost at its last renewal, a time of Now, plus
	// RenewDeadline: a test that sets Now sets AfterFunc to the same
	// clock, and moves both together.
	AfterFunc func(d time.Duration, f func()) interface{ Stop() bool }

	mu       sync.Mutex
	held     map[int]*running
	stopping map[int]chan struct{}
	// warming ends each Warm running, by shard.
	warming map[int]context.CancelFunc
	// count is the newest count of the replicas (under mu).
	count counted

	obsMu    sync.Mutex
	observed map[string]observation

	// started is when Start began (step's goroutine only).
	started time.Time
	// takeAt is when the first Lease of a shard this replica warms
	// expires, zero if none (step's goroutine only): the round after
	// that comes then, not up to a RetryPeriod later.
	takeAt time.Time

	// unsharded is the single leader this replica last yielded to, ""
	// if none (step's goroutine only; yieldToUnsharded).
	unsharded string

	// own is this replica's member Lease as last written (the counting
	// goroutine's only).
	own *coordinationv1.Lease

	// The rounds in a row that could not count the replicas (the
	// counting goroutine's), or list the shards' Leases (step's): a loaded
	// API server fails many rounds' reads in a row, which are logged once
	// a streak.
	counting, listing streak
}

// counted is a count of the replicas and when it was made (zero: never).
type counted struct {
	set memberSet
	at  time.Time
}

// streak counts the failed rounds of one read in a row, so that a run of
// them is logged when it starts and when it ends, not every round.
type streak struct{ failed int }

// fail records a failed round, logging msg on the first of a streak.
func (s *streak) fail(log logr.Logger, msg string, err error) {
	if s.failed == 0 {
		log.Info(msg, "error", err.Error())
	}
	s.failed++
}

// ok records a round that succeeded, logging msg if it ends a streak.
func (s *streak) ok(log logr.Logger, msg string) {
	if s.failed > 0 {
		log.Info(msg, "roundsFailed", s.failed)
	}
	s.failed = 0
}

// running is a shard this replica holds.
type running struct {
	lease     *coordinationv1.Lease
	renewed   time.Time
	cancel    context.CancelFunc
	done      chan struct{}
	heldSince time.Time
	// handingBack says why the shard's work was stopped to release its
	// Lease once it has ended (handBack); "" while it works.
	handingBack string
	// watchdog loses the shard at renewed + RenewDeadline unless it is
	// renewed before (watch); watch counts its armings, renewErr is the
	// last renewal's error since renewed (all under mu).
	watchdog interface{ Stop() bool }
	watch    uint64
	renewErr error
}

// observation is when this replica saw a Lease's record change: a Lease is
// expired when its record has not changed for its duration as measured on
// this replica's clock, whatever the holder's clock says (client-go's rule).
// seen is when this replica last read the record unchanged.
type observation struct {
	record string
	at     time.Time
	seen   time.Time
}

// Held lists the shards this replica holds, in order.
func (a *Assigner) Held() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]int, 0, len(a.held))
	for k := range a.held {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// LeaseName is shard k's Lease.
func (a *Assigner) LeaseName(k int) string {
	if k == 0 {
		return a.Name
	}
	return a.Name + "-" + strconv.Itoa(k)
}

func (a *Assigner) memberName() string { return a.memberNameOf(a.Identity) }

// memberNameOf is the name of replica id's member Lease.
func (a *Assigner) memberNameOf(id string) string { return a.Name + "-member-" + id }

func (a *Assigner) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// afterFunc arms a timer of the Assigner's clock (AfterFunc).
func (a *Assigner) afterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	if a.AfterFunc != nil {
		return a.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}

func (a *Assigner) defaults() error {
	if a.Shards < 1 || a.Shards > Slots {
		return fmt.Errorf("shards %d: want 1 to %d", a.Shards, Slots)
	}
	if a.LeaseDuration <= 0 {
		a.LeaseDuration = 15 * time.Second
	}
	if a.RenewDeadline <= 0 {
		a.RenewDeadline = 10 * time.Second
	}
	if a.RetryPeriod <= 0 {
		a.RetryPeriod = 2 * time.Second
	}
	// A Lease holds its duration in whole seconds (spec), and a taker
	// waits what the Lease holds: with a fraction of a second cut off, a
	// holder cut off from the API server would still work the shard, up
	// to its renew deadline, after another replica may take it.
	if a.LeaseDuration%time.Second != 0 {
		return fmt.Errorf("lease duration %s: want a whole number of seconds, as a Lease records it", a.LeaseDuration)
	}
	if a.RenewDeadline >= a.LeaseDuration {
		return fmt.Errorf("renew deadline %s: want less than the lease duration %s, so a holder stops before another replica may take its shards", a.RenewDeadline, a.LeaseDuration)
	}
	a.held = map[int]*running{}
	a.stopping = map[int]chan struct{}{}
	a.warming = map[int]context.CancelFunc{}
	a.observed = map[string]observation{}
	return nil
}

// releaseTimeout is the least time a stopping replica gives the release of
// its Leases (within a Pod's default 30 s grace period).
const releaseTimeout = 10 * time.Second

// Start runs the Assigner until ctx ends (manager.Runnable): it then stops
// every shard it holds, waits for their work to end, and releases their
// Leases and its member Lease, so another replica takes them at once.
func (a *Assigner) Start(ctx context.Context) error {
	if err := a.defaults(); err != nil {
		return err
	}
	a.started = a.now()
	ShardsGauge.Set(float64(a.Shards))
	// The replicas are counted on a goroutine of their own, with a
	// deadline of RenewDeadline, not a round's: at 100,000 objects a count
	// (a member Lease's update and a list) missed a round's deadline in
	// about a hundred streaks a replica, and a count inside the round
	// that waited longer would hold back the shards' renewals. The first
	// count is made before the first round, so a replica starting takes
	// its first shard in its first round, as before.
	a.countOnce(ctx)
	counting := make(chan struct{})
	go func() {
		defer close(counting)
		wait.JitterUntilWithContext(ctx, a.countOnce, a.RetryPeriod, 0.2, true)
	}()
	a.rounds(ctx)
	<-counting
	// ctx has ended: release with a context of its own, of at least
	// releaseTimeout (a loaded API server answers slowly, and a Lease
	// not released is only taken over once it expires).
	rctx, cancel := context.WithTimeout(context.Background(), max(a.RenewDeadline, releaseTimeout))
	defer cancel()
	errs := a.stopAll(rctx)
	a.mu.Lock()
	stopping := a.stopping
	a.mu.Unlock()
	for _, done := range stopping {
		<-done
	}
	a.warmOnly(nil)
	errs = append(errs, a.leaveMembers(rctx))
	return errors.Join(errs...)
}

// rounds runs step every RetryPeriod (jittered up to 20 %, counted from
// the end of the last, as wait.JitterUntil), until ctx ends; and at once
// when a Lease of a shard this replica warms expires (takeAt): its
// caches are filled, and a take a round later would only hold them back.
func (a *Assigner) rounds(ctx context.Context) {
	for ctx.Err() == nil {
		a.step(ctx)
		next := wait.Jitter(a.RetryPeriod, 0.2)
		if d := a.takeAt.Sub(a.now()); d > 0 {
			next = min(next, d+10*time.Millisecond)
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// step is one round: keep what is held, and balance by the newest count
// of the replicas (countOnce), taking at most one more shard, or a dead
// replica's shards.
//
// The replicas that run this number of shards split them: with n of
// them, each holds at most ceil(shards/n), and one that holds more than
// floor(shards/n) gives one up while another holds fewer, so three
// replicas of four shards hold 2, 1 and 1, not 2, 2 and 0. A replica
// takes nothing while an older live replica runs another number of
// shards (a change being rolled out): the older ones keep serving until
// they are gone. Nor while a single leader holds shard 0's Lease
// (yieldToUnsharded): it runs every shard.
func (a *Assigner) step(ctx context.Context) {
	m, ok := a.latestCount()
	a.renew(ctx)
	if !ok {
		return
	}
	leases, err := a.shardLeases(ctx)
	if err != nil {
		a.listing.fail(a.Log, "could not list the shards' leases (logged again when they are listed)", err)
		return
	}
	a.listing.ok(a.Log, "listed the shards' leases again")
	if a.yieldToUnsharded(ctx, m, leases) {
		return
	}
	limit := a.limit(m, leases)
	held := a.Held()
	for i := len(held) - 1; i >= limit; i-- {
		a.handBack(held[i], "balancing")
	}
	settled := a.now().Sub(a.started) >= a.LeaseDuration
	if m.olderDisagree || len(held) > limit {
		a.warmOnly(nil)
		return
	}
	warmers := a.warmers(m, leases)
	a.warmUp(warmers, leases, settled)
	// One shard per round: replicas that start together (a Deployment
	// scaled up from zero, a rollout) see each other's member Leases only
	// a round later, and one that took every free shard at once would give
	// most of them up again after re-checking their objects, for the taker
	// to re-check once more. Taking one per round, each starting replica
	// ends with its share and no shard moves; a lone replica holds all of
	// them a few rounds later, each already working meanwhile.
	//
	// Except the shards of a replica that died: a replica that has run for
	// a Lease duration has seen every other replica that was live a round
	// ago, so it takes every shard whose holder's Lease expired, up to its
	// share, in one round. Their work waits for nothing else.
	a.takeUpTo(ctx, limit, settled, warmers, leases)
}

// yieldToUnsharded reports whether a single leader runs every shard now:
// shard 0's Lease is held, not expired, by a replica without a member
// Lease, one with --shards 1 (whose leader election takes that Lease) or
// of a release from before shards. This replica then takes no shard, warms
// none, and hands back those it holds (their Leases released once their
// work has ended), until that Lease is released or expires: a rollout that
// turns shards on lets the single leader finish before the shards start.
// (One that turns them off has its single leader wait for the sharded
// replicas to go, UnshardedLock; a single leader that did not, an earlier
// release rolled back to, meets the shards given back within a round.)
// A shard this replica holds beside the single leader is given back, not
// lost: its Lease stays renewed until its work has ended.
func (a *Assigner) yieldToUnsharded(ctx context.Context, m memberSet, leases map[string]*coordinationv1.Lease) bool {
	holder, sure := a.unshardedLeader(ctx, m, leases)
	if holder == "" {
		if a.unsharded != "" {
			a.Log.Info("the single leader released shard 0's lease or its lease expired: taking shards again", "leader", a.unsharded)
			a.unsharded = ""
		}
		return false
	}
	a.warmOnly(nil)
	if !sure {
		// Not known whether the holder is a sharded replica: take
		// nothing this round, give nothing back.
		return true
	}
	if a.unsharded != holder {
		a.Log.Info("a single leader (--shards 1, or a release before shards) holds shard 0's lease and runs every shard: taking no shard until it is gone", "leader", holder, "held", a.Held())
		a.unsharded = holder
	}
	for _, k := range a.Held() {
		a.handBack(k, "a single leader runs every shard")
	}
	return true
}

// unshardedLeader is the holder of shard 0's Lease (leases) if that Lease
// is not expired and held by a single leader: controller-runtime's leader
// election (--shards 1, or a release from before shards) names its holder
// host_uuid, which makes no Lease name, where a replica running shards
// names its member Lease after its identity. A holder that could be such
// a replica is never taken for a single leader, even without its member
// Lease (one that stopped after a release of shard 0 failed, its member
// Lease deleted): every replica would otherwise hand back every shard
// until that Lease expired. sure is always true (kept for a caller that
// could not tell).
func (a *Assigner) unshardedLeader(_ context.Context, m memberSet, leases map[string]*coordinationv1.Lease) (holder string, sure bool) {
	l := leases[a.LeaseName(0)]
	if l == nil || l.Spec.HolderIdentity == nil {
		return "", true
	}
	id := *l.Spec.HolderIdentity
	if id == "" || id == a.Identity || m.members[id] || a.expiredFor(l) > 0 {
		return "", true
	}
	if len(validation.IsDNS1123Subdomain(a.memberNameOf(id))) > 0 {
		return id, true
	}
	return "", true
}

// countOnce counts the replicas (members), giving it until RenewDeadline,
// and keeps the count for step.
func (a *Assigner) countOnce(ctx context.Context) {
	m, err := a.members(ctx)
	if err != nil {
		CountFailures.Inc()
		a.counting.fail(a.Log, "could not count the replicas; keeping the shards held, and taking none once the last count is a Lease duration old, until they are counted (logged again when they are)", err)
		return
	}
	a.counting.ok(a.Log, "counted the replicas again")
	a.forgetUnseen()
	ReplicasGauge.Set(float64(len(m.peers)))
	a.mu.Lock()
	a.count = counted{set: m, at: a.now()}
	a.mu.Unlock()
}

// latestCount is the newest count of the replicas, if one was made within
// a Lease duration: a replica that joined since is counted by then, and one
// that left has expired by then. A count that old may still be off by a
// replica, which only moves a shard more than needed (it is given back or
// taken a round later); each take is an update under the Lease's
// resourceVersion whatever the count.
func (a *Assigner) latestCount() (memberSet, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.count.at.IsZero() || a.now().Sub(a.count.at) > a.LeaseDuration {
		return memberSet{}, false
	}
	return a.count.set, true
}

// limit is how many shards this replica may hold now (see step).
//
// A peer whose member Lease is quiet (not renewed for RenewDeadline) and
// one of whose shard Leases has expired is not counted: it is gone, and
// its member Lease, renewed on a clock of its own, may expire a round
// after its shards' Leases, which would otherwise keep the others from
// taking them for that round.
func (a *Assigner) limit(m memberSet, leases map[string]*coordinationv1.Lease) int {
	holds := map[string]int{}
	gone := map[string]bool{}
	for _, l := range leases {
		if l.Spec.HolderIdentity == nil {
			continue
		}
		if a.expiredFor(l) <= 0 {
			holds[*l.Spec.HolderIdentity]++
		} else if m.quiet[*l.Spec.HolderIdentity] {
			gone[*l.Spec.HolderIdentity] = true
		}
	}
	n := 0
	for _, id := range m.peers {
		if !gone[id] {
			n++
		}
	}
	n = max(n, 1)
	floor, ceil := a.Shards/n, (a.Shards+n-1)/n
	for _, id := range m.peers {
		if id != a.Identity && !gone[id] && holds[id] < floor {
			return floor
		}
	}
	return ceil
}

// shardLeases lists the shards' Leases by name.
func (a *Assigner) shardLeases(ctx context.Context) (map[string]*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, a.RetryPeriod)
	defer cancel()
	var list coordinationv1.LeaseList
	if err := a.Client.List(ctx, &list, client.InNamespace(a.Namespace), client.MatchingLabels{LeaseKindLabel: "shard"}, fromWatchCache()); err != nil {
		return nil, err
	}
	out := map[string]*coordinationv1.Lease{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	// Shard 0's Lease may be an earlier release's leader election Lease,
	// without the label.
	if _, ok := out[a.LeaseName(0)]; !ok {
		l := &coordinationv1.Lease{}
		err := a.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.LeaseName(0)}, l)
		if err == nil {
			out[l.Name] = l
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return out, nil
}

// fromWatchCache is the list option of the Assigner's Lease lists:
// resourceVersion "0", served from the API server's watch cache as it is,
// without the wait of a consistent read. A consistent list waits until
// the cache has seen etcd's newest revision, and on an API server busy
// with writes that wait ran past the round's deadline (RetryPeriod):
// every replica failed to count the others for tens of seconds at a time
// while 10,000 Bucketies were created, and took no shard meanwhile. The
// lists only decide what to try: a Lease read a moment stale is taken by
// an update with its resourceVersion, which the API server refuses if the
// Lease changed, and counts are read again every round.
func fromWatchCache() client.ListOption {
	// A new Raw each call: the client writes the selectors into it.
	return &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}
}

// firstToTry spreads the replicas' first attempts over the shards.
func (a *Assigner) firstToTry() int { return SlotOf(a.Identity) % a.Shards }

// memberSet is what the member Leases say: the live replicas that run
// this number of shards (peers, by identity, this one included), and
// whether an older live replica runs another number.
type memberSet struct {
	peers         []string
	olderDisagree bool
	// quiet are the peers whose member Lease this replica has not seen
	// renewed for RenewDeadline: likely gone, not yet expired.
	quiet map[string]bool
	// members are the identities of every replica with a member Lease,
	// whatever its number of shards, live or expired (this one included):
	// a holder of shard 0's Lease not among them may be a single leader
	// (unshardedLeader).
	members map[string]bool
}

// members renews this replica's member Lease and reads the others'.
// Member Leases expired for ten durations are deleted. It may take until
// RenewDeadline, as a renewal may.
func (a *Assigner) members(ctx context.Context) (memberSet, error) {
	ctx, cancel := context.WithTimeout(ctx, max(a.RetryPeriod, a.RenewDeadline))
	defer cancel()
	own, err := a.beCounted(ctx)
	if err != nil {
		return memberSet{}, err
	}
	var list coordinationv1.LeaseList
	if err := a.Client.List(ctx, &list, client.InNamespace(a.Namespace), client.MatchingLabels{LeaseKindLabel: "member"}, fromWatchCache()); err != nil {
		return memberSet{}, err
	}
	m := memberSet{peers: []string{a.Identity}, members: map[string]bool{a.Identity: true}}
	for i := range list.Items {
		l := &list.Items[i]
		if l.Name == own.Name {
			continue
		}
		if l.Spec.HolderIdentity != nil {
			m.members[*l.Spec.HolderIdentity] = true
		}
		if gone := a.expiredFor(l); gone > 0 {
			if gone > 10*a.LeaseDuration {
				if err := a.Client.Delete(ctx, l, client.Preconditions{ResourceVersion: &l.ResourceVersion}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
					a.Log.Info("could not delete a departed replica's member lease", "lease", l.Name, "error", err.Error())
				}
			}
			continue
		}
		if l.Annotations[ShardsAnnotation] == strconv.Itoa(a.Shards) {
			if l.Spec.HolderIdentity != nil {
				m.peers = append(m.peers, *l.Spec.HolderIdentity)
				if a.unchangedFor(l) >= a.RenewDeadline {
					if m.quiet == nil {
						m.quiet = map[string]bool{}
					}
					m.quiet[*l.Spec.HolderIdentity] = true
				}
			}
		} else if older(l, own) {
			m.olderDisagree = true
		}
	}
	return m, nil
}

// older reports whether Lease l was created before own (the name breaks a
// tie).
func older(l, own *coordinationv1.Lease) bool {
	if !l.CreationTimestamp.Equal(&own.CreationTimestamp) {
		return l.CreationTimestamp.Before(&own.CreationTimestamp)
	}
	return l.Name < own.Name
}

// beCounted creates or renews this replica's member Lease: one update of
// the copy last written, read again first only when there is none or the
// update conflicts (another writer, or a renewal whose answer was lost).
func (a *Assigner) beCounted(ctx context.Context) (*coordinationv1.Lease, error) {
	now := metav1.NewMicroTime(a.now())
	if a.own != nil {
		l := a.own.DeepCopy()
		l.Spec = a.spec(now, now)
		err := a.Client.Update(ctx, l)
		if err == nil {
			a.own = l
			return l, nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return nil, err
		}
		a.own = nil
	}
	l := &coordinationv1.Lease{}
	err := a.Client.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.memberName()}, l)
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: a.Namespace, Name: a.memberName(),
			Labels:      map[string]string{LeaseKindLabel: "member"},
			Annotations: map[string]string{ShardsAnnotation: strconv.Itoa(a.Shards)},
		}, Spec: a.spec(now, now)}
		err = a.Client.Create(ctx, l)
	} else if err == nil {
		l.Spec = a.spec(now, now)
		err = a.Client.Update(ctx, l)
	}
	if err != nil {
		return nil, err
	}
	a.own = l
	return l, nil
}

// leaveMembers deletes this replica's member Lease.
func (a *Assigner) leaveMembers(ctx context.Context) error {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.memberName()}}
	return client.IgnoreNotFound(a.Client.Delete(ctx, l))
}

// spec is a Lease held by this replica since acquired, renewed now.
func (a *Assigner) spec(acquired, now metav1.MicroTime) coordinationv1.LeaseSpec {
	secs := int32(a.LeaseDuration / time.Second)
	id := a.Identity
	return coordinationv1.LeaseSpec{HolderIdentity: &id, LeaseDurationSeconds: &secs, AcquireTime: &acquired, RenewTime: &now}
}

// expiredFor is how long Lease l has been expired, by this replica's
// observation of its record; 0 or less: not expired. A released Lease (no
// holder) is expired.
func (a *Assigner) expiredFor(l *coordinationv1.Lease) time.Duration {
	unchanged := a.unchangedFor(l)
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return max(unchanged, time.Nanosecond)
	}
	d := a.LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return unchanged - d
}

// forgetUnseen drops the observations of Leases no read has found for ten
// Lease durations: member Leases of departed replicas, deleted by then
// (members), which a controller rolled out daily would otherwise keep for
// good, one per Pod it ever ran. A Lease read again later is observed
// afresh, as one first seen: expired only a Lease duration after that.
func (a *Assigner) forgetUnseen() {
	cutoff := a.now().Add(-10 * a.LeaseDuration)
	a.obsMu.Lock()
	defer a.obsMu.Unlock()
	for k, o := range a.observed {
		if o.seen.Before(cutoff) {
			delete(a.observed, k)
		}
	}
}

// unchangedFor is how long this replica has seen Lease l's record
// unchanged (0 the first time it sees this record).
func (a *Assigner) unchangedFor(l *coordinationv1.Lease) time.Duration {
	now := a.now()
	a.obsMu.Lock()
	defer a.obsMu.Unlock()
	o, ok := a.observed[l.Namespace+"/"+l.Name]
	if !ok || o.record != l.ResourceVersion {
		o = observation{record: l.ResourceVersion, at: now}
	}
	o.seen = now
	a.observed[l.Namespace+"/"+l.Name] = o
	return now.Sub(o.at)
}

// renew renews every shard held, each at once. A shard whose work ended is
// given up; a shard whose Lease another holder took, or that could not be
// renewed for RenewDeadline, is stopped at once, without a release: it is
// lost (at the deadline itself by its watchdog, watchLocked, whatever the
// round is doing then).
func (a *Assigner) renew(ctx context.Context) {
	var wg sync.WaitGroup
	for _, k := range a.Held() {
		wg.Go(func() { a.renewShard(ctx, k) })
	}
	wg.Wait()
}

// renewShard renews shard k. The renewal may take until the renew deadline
// (as client-go's leader election's may): an API server slow to answer, as
// one holding 100,000 objects is, has not taken the Lease away.
func (a *Assigner) renewShard(ctx context.Context, k int) {
	a.mu.Lock()
	r := a.held[k]
	a.mu.Unlock()
	if r == nil {
		return
	}
	select {
	case <-r.done:
		why := "its work ended"
		a.mu.Lock()
		if r.handingBack != "" {
			why = r.handingBack
		}
		a.mu.Unlock()
		gctx, cancel := context.WithTimeout(ctx, a.RetryPeriod)
		defer cancel()
		if err := a.give(gctx, k, why); err != nil {
			a.Log.Info("could not release a shard", "shard", k, "error", err.Error())
		}
		return
	default:
	}
	a.mu.Lock()
	l, renewed := r.lease.DeepCopy(), r.renewed
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, max(a.RetryPeriod, a.RenewDeadline-a.now().Sub(renewed)))
	defer cancel()
	now := metav1.NewMicroTime(a.now())
	l.Spec.RenewTime = &now
	err := a.Client.Update(ctx, l)
	if err == nil {
		a.renewedAt(k, r, l, now.Time)
		return
	}
	if apierrors.IsConflict(err) {
		ours, at := a.stillOurs(ctx, r)
		if !ours {
			a.lose(k, r, "another replica holds its lease")
			return
		}
		// Our own renewal changed the Lease: one whose answer was lost (a
		// timeout of an API server too busy to answer in time, which
		// carried it out all the same). It renewed the Lease when it was
		// sent, or later as the others see it.
		if at.After(renewed) {
			a.renewedAt(k, r, nil, at)
			return
		}
	}
	a.mu.Lock()
	if r.renewed.Equal(renewed) {
		r.renewErr = err
	}
	a.mu.Unlock()
	if a.now().Sub(renewed) >= a.RenewDeadline {
		a.lose(k, r, "its lease could not be renewed: "+err.Error())
	}
}

// renewedAt notes that shard k, held as r, was renewed at (its Lease now
// l; nil: unchanged), and rearms its watchdog.
func (a *Assigner) renewedAt(k int, r *running, l *coordinationv1.Lease, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l != nil {
		r.lease = l
	}
	r.renewed, r.renewErr = at, nil
	if a.held[k] == r {
		a.watchLocked(k, r)
	}
}

// watchLocked (re)arms shard k's watchdog (a.mu held): the shard, held as
// r, is lost at r.renewed + RenewDeadline unless renewed before. A round
// notices a renewal deadline passed only when it renews the shard, and a
// round whose list of the Leases and takes are slow (up to a RetryPeriod
// each, then its pause of up to 1.2 RetryPeriods) noticed it up to 3.2
// RetryPeriods late: 16.4 s after the last renewal with the default
// timings, past the Lease's expiry at 15 s, when another replica may take
// the shard while its work still ran here.
func (a *Assigner) watchLocked(k int, r *running) {
	if r.watchdog != nil {
		r.watchdog.Stop()
	}
	r.watch++
	watch := r.watch
	r.watchdog = a.afterFunc(r.renewed.Add(a.RenewDeadline).Sub(a.now()), func() { a.overdue(k, r, watch) })
}

// overdue is shard k's watchdog, armed as watch: the shard, held as r,
// was not renewed by its renew deadline, and is lost unless renewed since
// (a newer watch), no longer held as r (lost already, or given up), or
// its work has ended (the next round releases it, as renewShard does).
func (a *Assigner) overdue(k int, r *running, watch uint64) {
	a.loseIf(k, r, func() (string, bool) {
		if r.watch != watch {
			return "", false
		}
		select {
		case <-r.done:
			return "", false
		default:
		}
		why := "its lease was not renewed by the renew deadline"
		if r.renewErr != nil {
			why = "its lease could not be renewed: " + r.renewErr.Error()
		}
		return why, true
	})
}

// stillOurs reads shard r's Lease afresh: true if this replica still holds
// it (r then carries the fresh copy, and at is its renewTime, which only
// this replica writes while it holds it), or if it could not be read (at
// is then zero).
func (a *Assigner) stillOurs(ctx context.Context, r *running) (ours bool, at time.Time) {
	l := &coordinationv1.Lease{}
	if err := a.Client.Get(ctx, client.ObjectKeyFromObject(r.lease), l); err != nil {
		return !apierrors.IsNotFound(err), time.Time{}
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != a.Identity {
		return false, time.Time{}
	}
	a.mu.Lock()
	r.lease = l
	a.mu.Unlock()
	if l.Spec.RenewTime != nil {
		at = l.Spec.RenewTime.Time
	}
	return true, at
}

// lose stops shard k's work, held as r, without releasing its Lease,
// which this replica can no longer vouch for. It does not wait for the
// work to end (the other shards' renewals must not wait for it); the
// shard is not taken again here until it has. A shard no longer held as r
// (lost already: the round and the watchdog may both find it lost) is
// left as it is.
func (a *Assigner) lose(k int, r *running, why string) {
	a.loseIf(k, r, func() (string, bool) { return why, true })
}

// loseIf loses shard k as lose does, if it is held as r and cond (called
// with a.mu held) says so, and why.
func (a *Assigner) loseIf(k int, r *running, cond func() (why string, ok bool)) {
	a.mu.Lock()
	if a.held[k] != r {
		a.mu.Unlock()
		return
	}
	why, ok := cond()
	if !ok {
		a.mu.Unlock()
		return
	}
	delete(a.held, k)
	a.stopping[k] = r.done
	r.watchdog.Stop()
	a.mu.Unlock()
	record(k, EventLost)
	a.Log.Info("lost a shard: stopping its work", "shard", k, "why", why)
	r.cancel()
}

// handBack stops shard k's work, to release its Lease once the work has
// ended: renewShard does, at the first round after. Until then the Lease
// is renewed as every held shard's is, so no other replica takes a shard
// whose work still runs here (an in-flight reconcile may take up to the
// manager's grace period to return), and the round goes on renewing the
// other shards instead of waiting for it: a round that waited in give for
// a slow shard renewed none of them, and past the Lease duration another
// replica took them while their work still ran here.
func (a *Assigner) handBack(k int, why string) {
	a.mu.Lock()
	r := a.held[k]
	if r == nil || r.handingBack != "" {
		a.mu.Unlock()
		return
	}
	r.handingBack = why
	a.mu.Unlock()
	a.Log.Info("stopping a shard's work, to release it once that has ended", "shard", k, "why", why)
	r.cancel()
}

// stopAll stops the work of every shard held, all at once, and releases
// each shard's Lease once its work has ended, renewing those whose work
// has not every RetryPeriod meanwhile, until ctx ends; then it waits for
// the rest and releases them with what is left of ctx (nothing: their
// Leases expire). A shard slow to stop neither holds back the others'
// release nor loses its Lease while its work still runs.
func (a *Assigner) stopAll(ctx context.Context) []error {
	for _, k := range a.Held() {
		a.handBack(k, "stopping")
	}
	var errs []error
	renewed := time.Now()
	for {
		for _, k := range a.Held() {
			if a.ended(k) || ctx.Err() != nil {
				errs = append(errs, a.give(ctx, k, "stopping"))
			}
		}
		if len(a.Held()) == 0 {
			return errs
		}
		if time.Since(renewed) >= a.RetryPeriod {
			a.renew(ctx)
			renewed = time.Now()
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// ended reports whether the work of shard k, held here, has ended.
func (a *Assigner) ended(k int) bool {
	a.mu.Lock()
	r := a.held[k]
	a.mu.Unlock()
	if r == nil {
		return false
	}
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// give stops shard k's work, waits for it to end, then releases its Lease
// so another replica may take it at once.
func (a *Assigner) give(ctx context.Context, k int, why string) error {
	a.mu.Lock()
	r := a.held[k]
	delete(a.held, k)
	if r != nil {
		r.watchdog.Stop()
	}
	a.mu.Unlock()
	if r == nil {
		return nil
	}
	r.cancel()
	<-r.done
	record(k, EventReleased)
	a.Log.Info("released a shard", "shard", k, "why", why, "heldFor", a.now().Sub(r.heldSince).Round(time.Millisecond).String())
	return a.release(ctx, r.lease.DeepCopy())
}

// release writes Lease l released: no holder, expired at once. The copy
// this replica holds may be older than the Lease: a renewal the API server
// carried out but whose answer was lost (a loaded API server, a stop that
// cut it off) leaves it one resourceVersion behind, and the update is a
// conflict. The Lease is then read: still this replica's, it is released
// from what was read; another holder's (or released already), there is
// nothing of this replica's to release.
func (a *Assigner) release(ctx context.Context, l *coordinationv1.Lease) error {
	for attempt := 1; ; attempt++ {
		none, one := "", int32(1)
		now := metav1.NewMicroTime(a.now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &none, &one, &now
		err := a.Client.Update(ctx, l)
		if err == nil || !apierrors.IsConflict(err) || attempt == 3 {
			return err
		}
		cur := &coordinationv1.Lease{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(l), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		if cur.Spec.HolderIdentity == nil || *cur.Spec.HolderIdentity != a.Identity {
			return nil
		}
		l = cur
	}
}

// takeUpTo takes free or expired shards of leases (the shard Leases as
// listed) while this replica holds fewer than limit: at most one a round,
// and, when settled (see step), every shard whose holder's Lease expired.
//
// A shard whose holder's Lease expired and which another replica warmed
// (warmers) is left to that replica for warmHeadStart after the expiry,
// so the replica whose caches are filled is the one that takes it; then,
// if it has not, any replica may.
func (a *Assigner) takeUpTo(ctx context.Context, limit int, settled bool, warmers map[int]string, leases map[string]*coordinationv1.Lease) {
	ctx, cancel := context.WithTimeout(ctx, a.RetryPeriod)
	defer cancel()
	first := a.firstToTry()
	// others: shards taken this round that were free, released, or
	// expired while this replica was not settled; at most one.
	others := 0
	for i := 0; i < a.Shards && len(a.Held()) < limit && ctx.Err() == nil; i++ {
		k := (first + i) % a.Shards
		if a.busy(k) {
			continue
		}
		l := leases[a.LeaseName(k)]
		orphaned := settled && l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && a.expiredFor(l) > 0
		if !orphaned && others > 0 {
			continue
		}
		if orphaned && a.Warm != nil {
			if w := warmers[k]; w != "" && w != a.Identity && a.expiredFor(l) < a.warmHeadStart() {
				continue
			}
		}
		if err := a.take(ctx, k, l); err != nil {
			a.Log.Info("could not take a shard", "shard", k, "error", err.Error())
		}
		if !orphaned && a.busy(k) {
			others++
		}
	}
}

// busy reports whether shard k is held here, or its work is still
// stopping after a loss.
func (a *Assigner) busy(k int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.held[k]; ok {
		return true
	}
	if done, ok := a.stopping[k]; ok {
		select {
		case <-done:
			delete(a.stopping, k)
		default:
			return true
		}
	}
	return false
}

// take takes shard k, whose Lease l was listed (nil: none yet), if l is
// free or expired, or names this replica, and starts its work. Another
// replica taking it first is not an error.
//
// A Lease that names this replica although it does not hold the shard is
// a take whose answer was lost: the API server carried it out after the
// round's deadline. No other replica runs the shard while the Lease names
// this one, so it is taken at once (an update under the Lease's
// resourceVersion, as a renewal), not a Lease duration later when it has
// expired. (A shard this replica lost is not taken before its work has
// stopped: takeUpTo skips it while busy.)
func (a *Assigner) take(ctx context.Context, k int, l *coordinationv1.Lease) error {
	now := metav1.NewMicroTime(a.now())
	var err error
	switch {
	case l == nil:
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: a.Namespace, Name: a.LeaseName(k), Labels: map[string]string{LeaseKindLabel: "shard"},
		}, Spec: a.spec(now, now)}
		err = a.Client.Create(ctx, l)
	case l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == a.Identity:
		// A renewal, as renewShard writes one.
		l = l.DeepCopy()
		l.Spec.RenewTime = &now
		err = a.Client.Update(ctx, l)
	case a.expiredFor(l) <= 0:
		return nil
	default:
		transitions := int32(0)
		if l.Spec.LeaseTransitions != nil {
			transitions = *l.Spec.LeaseTransitions + 1
		}
		l = l.DeepCopy()
		l.Spec = a.spec(now, now)
		l.Spec.LeaseTransitions = &transitions
		if l.Labels[LeaseKindLabel] != "shard" {
			l.Labels = map[string]string{LeaseKindLabel: "shard"}
		}
		err = a.Client.Update(ctx, l)
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return err
	}
	a.start(k, l, now.Time)
	return nil
}

// start runs shard k's work, held under Lease l since now. What Warm
// prepared for k is left to Run, and its context ends once Run has
// returned.
func (a *Assigner) start(k int, l *coordinationv1.Lease, now time.Time) {
	sctx, cancel := context.WithCancel(context.Background())
	r := &running{lease: l, renewed: now, heldSince: now, cancel: cancel, done: make(chan struct{})}
	a.mu.Lock()
	a.held[k] = r
	a.watchLocked(k, r)
	endWarm, warmed := a.warming[k]
	delete(a.warming, k)
	a.mu.Unlock()
	if warmed {
		Warms.WithLabelValues(WarmTaken).Inc()
	}
	record(k, EventTaken)
	a.Log.Info("took a shard", "shard", k, "of", a.Shards, "warmed", warmed)
	go func() {
		defer close(r.done)
		if warmed {
			defer endWarm()
		}
		if err := a.Run(sctx, k); err != nil && sctx.Err() == nil {
			a.Log.Error(err, "a shard's work ended", "shard", k)
		}
	}()
}

// warmHeadStart is how long after a Lease's expiry the replica that warmed
// its shard has to take it before the others may: two rounds.
func (a *Assigner) warmHeadStart() time.Duration { return 2 * a.RetryPeriod }

// quietAfter is how long a holder's shard Lease and its member Lease both
// go unchanged before the holder looks gone (warmers): half the renew
// deadline, and at least two rounds (a live replica renews both every
// round, the member Lease on a goroutine of its own), at most the renew
// deadline. 5 s with the default timings.
func (a *Assigner) quietAfter() time.Duration {
	return min(a.RenewDeadline, max(a.RenewDeadline/2, 2*a.RetryPeriod))
}

// memberUnchangedFor is how long this replica has seen replica id's member
// Lease unchanged, from its first read of the record to its last (its
// last count's); 0 if it has not read one. Not up to now: a count late on
// this replica's side (its own member Lease's update slow on a loaded API
// server) says nothing of the peer, which may have renewed since.
func (a *Assigner) memberUnchangedFor(id string) time.Duration {
	a.obsMu.Lock()
	defer a.obsMu.Unlock()
	o, ok := a.observed[a.Namespace+"/"+a.memberNameOf(id)]
	if !ok {
		return 0
	}
	return o.seen.Sub(o.at)
}

// warmers names, for each shard whose holder looks gone, the replica that
// is to warm it and take it when its Lease expires.
//
// A holder looks gone when its shard's Lease has not changed for
// RenewDeadline (a live holder that could not renew for that long has
// stopped the shard's work, so the Lease is about to be taken over), or
// sooner, when that Lease and the holder's member Lease have both gone
// unchanged for quietAfter: a replica killed stops renewing both at once,
// while one whose shard renewals stall on a loaded API server keeps
// renewing its member Lease. The earlier the warm, the more of the
// shard's lists are done when its Lease expires; a warm begun for a
// holder that renews after all is dropped, having cost one list of the
// shard's objects.
//
// The shards go to the live replicas that run this number of shards, but
// the holders and those whose own member Lease is as quiet (or as silent
// as a gone holder's), one at a time in order of shard, each to the one
// holding fewest then (the shards it holds, and those it is given here;
// ties in order of identity) among those holding fewer than their share
// of the shards: the split the replicas balance to once the holder is
// gone, so each warmer has room to take what it warmed. A holder whose
// member Lease is renewed (a live replica whose shard renewals stall, as
// one listing a shard on starved cores) still counts among them, so its
// shards are warmed only by a replica below its share now, which could
// take them at their expiry, and by none otherwise. Every replica reads
// the same Leases, so they agree on it; one that does not only takes the
// shard without caches filled ahead, as before Warm.
func (a *Assigner) warmers(m memberSet, leases map[string]*coordinationv1.Lease) map[int]string {
	gone := map[int]string{}
	holds := map[string]int{}
	// silent: holders gone by both their Leases' silence (quietAfter).
	silent := map[string]bool{}
	for k := 0; k < a.Shards; k++ {
		l := leases[a.LeaseName(k)]
		if l == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			continue
		}
		id := *l.Spec.HolderIdentity
		unchanged := a.unchangedFor(l)
		memberSilent := a.memberUnchangedFor(id) >= a.quietAfter()
		if unchanged >= a.RenewDeadline || (unchanged >= a.quietAfter() && memberSilent) {
			gone[k] = id
			// Whichever rule found it gone, a holder as silent stays
			// out of the live replicas until its member Lease is
			// quiet (m.quiet): counted live again at the renew
			// deadline, it would lower every share for a round, and
			// the warm begun at quietAfter be dropped and begun again.
			if memberSilent {
				silent[id] = true
			}
		} else {
			holds[id]++
		}
	}
	if len(gone) == 0 {
		return nil
	}
	var live []string
	for _, id := range m.peers {
		if !m.quiet[id] && !silent[id] {
			live = append(live, id)
		}
	}
	sort.Strings(live)
	share := (a.Shards + len(live) - 1) / max(len(live), 1)
	out := map[int]string{}
	for k := 0; k < a.Shards; k++ {
		holder, ok := gone[k]
		if !ok {
			continue
		}
		best := ""
		for _, id := range live {
			if id != holder && holds[id] < share && (best == "" || holds[id] < holds[best]) {
				best = id
			}
		}
		if best != "" {
			out[k] = best
			holds[best]++
		}
	}
	return out
}

// warmUp warms, when settled, the shards this replica is to take once
// their Leases expire (warmers), and ends the warming of the others. It
// notes when the first of those Leases expires, for the round then.
func (a *Assigner) warmUp(warmers map[int]string, leases map[string]*coordinationv1.Lease, settled bool) {
	a.takeAt = time.Time{}
	if a.Warm == nil {
		return
	}
	want := map[int]bool{}
	for k, id := range warmers {
		if settled && id == a.Identity && !a.busy(k) {
			want[k] = true
			if at := a.now().Add(-a.expiredFor(leases[a.LeaseName(k)])); a.takeAt.IsZero() || at.Before(a.takeAt) {
				a.takeAt = at
			}
		}
	}
	a.warmOnly(want)
}

// warmOnly ends the warming of every shard not in want, and starts it for
// those in want not yet warming.
func (a *Assigner) warmOnly(want map[int]bool) {
	type begin struct {
		ctx context.Context
		k   int
	}
	var begins []begin
	a.mu.Lock()
	for k, end := range a.warming {
		if !want[k] {
			end()
			delete(a.warming, k)
			Warms.WithLabelValues(WarmDropped).Inc()
			a.Log.Info("stopped warming a shard", "shard", k)
		}
	}
	for k := range want {
		if _, ok := a.warming[k]; ok {
			continue
		}
		ctx, end := context.WithCancel(context.Background())
		a.warming[k] = end
		begins = append(begins, begin{ctx, k})
	}
	a.mu.Unlock()
	// On this goroutine, before the round's takes: a take in this round
	// finds what Warm began.
	for _, b := range begins {
		a.Log.Info("warming a shard whose holder looks gone", "shard", b.k)
		a.Warm(b.ctx, b.k)
	}
}
