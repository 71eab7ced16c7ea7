package shard

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// UnshardedLock is the leader election lock of a replica that runs without
// shards (--shards 1): the Lease lock it wraps (controller-runtime's, on
// shard 0's Lease), which it does not acquire while a live replica runs
// more than one shard. Such a replica holds shard 0's Lease only among
// others, so the single leader would otherwise take that Lease once it
// is free and run every shard beside the sharded replicas still running
// the rest: a rollout that turns shards off lets the older, sharded
// replicas finish before the single leader starts. (One that turns them
// on has the sharded replicas yield to the single leader: Assigner.)
//
// A replica runs more than one shard while its member Lease is live: it
// deletes it only once it has released every shard's Lease, and one that
// died has it expire (not renewed for its duration, on this replica's
// clock, as client-go's rule). An expired member Lease is deleted, so
// the next single leader need not wait for it again.
//
// Renewals and releases are the wrapped lock's: only an acquisition waits.
type UnshardedLock struct {
	// Interface is the Lease lock the leader election would use alone.
	resourcelock.Interface
	// Client reads (and deletes the expired) member Leases; it must not
	// be a cache's.
	Client client.Client
	// Namespace and Name are the Assigner's: the member Leases are
	// Name-member-<identity> in Namespace.
	Namespace, Name string
	// LeaseDuration is the member Leases' duration when they name none.
	LeaseDuration time.Duration
	// Log says why the acquisition waits, once a wait.
	Log logr.Logger
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	mu       sync.Mutex
	leading  bool
	waiting  bool
	observed map[string]observation
}

// Create creates the Lease with ler, unless sharded replicas still run.
func (u *UnshardedLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := u.mayAcquire(ctx, ler); err != nil {
		return err
	}
	err := u.Interface.Create(ctx, ler)
	u.wrote(ler, err)
	return err
}

// Update writes ler to the Lease: a renewal or a release at once, an
// acquisition unless sharded replicas still run.
func (u *UnshardedLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if err := u.mayAcquire(ctx, ler); err != nil {
		return err
	}
	err := u.Interface.Update(ctx, ler)
	u.wrote(ler, err)
	return err
}

// wrote notes whether this replica leads after writing ler.
func (u *UnshardedLock) wrote(ler resourcelock.LeaderElectionRecord, err error) {
	if err != nil {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.leading = ler.HolderIdentity != "" && ler.HolderIdentity == u.Identity()
}

// mayAcquire refuses an acquisition (a write naming this replica while it
// does not lead) while a live replica runs more than one shard, or while
// the member Leases cannot be read.
func (u *UnshardedLock) mayAcquire(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	u.mu.Lock()
	leading := u.leading
	u.mu.Unlock()
	if leading || ler.HolderIdentity == "" {
		return nil
	}
	sharded, err := u.ShardedReplicas(ctx)
	if err != nil {
		return fmt.Errorf("not taking the leader election lease: could not read the member leases of replicas running shards: %w", err)
	}
	u.mu.Lock()
	was := u.waiting
	u.waiting = len(sharded) > 0
	u.mu.Unlock()
	if len(sharded) > 0 {
		if !was {
			u.Log.Info("waiting for the replicas that run shards to stop before leading (a rollout turning shards off): they run the shards beside shard 0's lease", "replicas", sharded)
		}
		return fmt.Errorf("not taking the leader election lease while replicas run shards: %v", sharded)
	}
	if was {
		u.Log.Info("the replicas that ran shards are gone: taking the leader election lease")
	}
	return nil
}

// ShardedReplicas lists the identities of the replicas whose member Lease
// is live and says they run more than one shard, deleting the member
// Leases that have expired.
func (u *UnshardedLock) ShardedReplicas(ctx context.Context) ([]string, error) {
	var list coordinationv1.LeaseList
	if err := u.Client.List(ctx, &list, client.InNamespace(u.Namespace), client.MatchingLabels{LeaseKindLabel: "member"}); err != nil {
		return nil, err
	}
	var out []string
	for i := range list.Items {
		l := &list.Items[i]
		if !strings.HasPrefix(l.Name, u.Name+"-member-") {
			continue
		}
		if n, err := strconv.Atoi(l.Annotations[ShardsAnnotation]); err == nil && n <= 1 {
			continue
		}
		if u.expired(l) {
			if err := u.Client.Delete(ctx, l, client.Preconditions{ResourceVersion: &l.ResourceVersion}); client.IgnoreNotFound(err) != nil {
				u.Log.Info("could not delete an expired member lease", "lease", l.Name, "error", err.Error())
			}
			continue
		}
		id := l.Name
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			id = *l.Spec.HolderIdentity
		}
		out = append(out, id)
	}
	sort.Strings(out)
	return out, nil
}

// expired reports whether member Lease l's record has not changed for its
// duration, as this replica has seen it (a record first seen is not).
func (u *UnshardedLock) expired(l *coordinationv1.Lease) bool {
	now := time.Now()
	if u.Now != nil {
		now = u.Now()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.observed == nil {
		u.observed = map[string]observation{}
	}
	key := l.Namespace + "/" + l.Name
	o, ok := u.observed[key]
	if !ok || o.record != l.ResourceVersion {
		o = observation{record: l.ResourceVersion, at: now}
	}
	o.seen = now
	u.observed[key] = o
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return true
	}
	d := u.LeaseDuration
	if d <= 0 {
		d = 15 * time.Second
	}
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Sub(o.at) > d
}
