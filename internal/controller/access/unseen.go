package access

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// The cache lags this controller's own writes of credential records.
//
// A record this controller deleted stays in its cache until the watch
// brings the deletion, which on a busy API server takes longer than the
// next pass of the access (withdrawRetry is a second). A pass that
// trusted the cache then took the revoked credential for the current one
// and granted it again: the upsert made the deleted user again, with no
// record, and the next pass, issuing the access's first credential under
// the same name, found "a principal buckety did not create" and held the
// access at PrincipalConflict for good. So the records this controller
// deleted are left out of every cached read of the access's credentials
// until its cache stops showing them.
//
// A record this controller created is missing from its cache for as long.
// A pass that then takes back what the access holds (its Buckety gone or
// another installation's, its share withdrawn) would find nothing to
// revoke, and the credential would live on until the orphan sweep or the
// access's next re-check; so while the cache does not show a record this
// controller created, the access's revocations read the records from the
// API server (revokeCached).

// unseenRecords are the UIDs of the credential records this controller
// deleted that its cache may still show, and of those it created that its
// cache may not show yet, by the UID of their access.
type unseenRecords struct {
	mu      sync.Mutex
	deleted map[types.UID]map[types.UID]bool
	created map[types.UID]map[types.UID]bool
	// keys are the namespace and name of the accesses in created, for
	// the pass that finds one gone (revokeLeft), which knows no UID.
	keys map[types.UID]types.NamespacedName
}

func addTo(m *map[types.UID]map[types.UID]bool, owner, rec types.UID) {
	if *m == nil {
		*m = map[types.UID]map[types.UID]bool{}
	}
	if (*m)[owner] == nil {
		(*m)[owner] = map[types.UID]bool{}
	}
	(*m)[owner][rec] = true
}

// deletedRecord remembers that record rec of access owner was deleted.
func (u *unseenRecords) deletedRecord(owner, rec types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	addTo(&u.deleted, owner, rec)
	if c := u.created[owner]; c != nil {
		delete(c, rec)
		if len(c) == 0 {
			delete(u.created, owner)
			delete(u.keys, owner)
		}
	}
}

// createdRecord remembers that record rec of access owner, named key,
// was created.
func (u *unseenRecords) createdRecord(key types.NamespacedName, owner, rec types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	addTo(&u.created, owner, rec)
	if u.keys == nil {
		u.keys = map[types.UID]types.NamespacedName{}
	}
	u.keys[owner] = key
}

// creatingAt returns the UIDs of the accesses named key of which the
// cache may not show yet a record this controller created.
func (u *unseenRecords) creatingAt(key types.NamespacedName) []types.UID {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []types.UID
	for owner, recs := range u.created {
		if len(recs) > 0 && u.keys[owner] == key {
			out = append(out, owner)
		}
	}
	return out
}

// creating reports whether the cache may not show yet a record of access
// owner this controller created.
func (u *unseenRecords) creating(owner types.UID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.created[owner]) > 0
}

// filter drops from creds, the cached records of access owner, those this
// controller deleted, and forgets what the cache already shows: a deleted
// record no longer listed, a created one listed (a UID is never used
// again, so a record gone from the cache stays gone).
func (u *unseenRecords) filter(owner types.UID, creds []v1.BucketyCredential) []v1.BucketyCredential {
	u.mu.Lock()
	defer u.mu.Unlock()
	if c := u.created[owner]; len(c) > 0 {
		for _, cr := range creds {
			delete(c, cr.UID)
		}
		if len(c) == 0 {
			delete(u.created, owner)
			delete(u.keys, owner)
		}
	}
	gone := u.deleted[owner]
	if len(gone) == 0 {
		return creds
	}
	shown := make(map[types.UID]bool, len(gone))
	out := creds[:0]
	for _, c := range creds {
		if gone[c.UID] {
			shown[c.UID] = true
			continue
		}
		out = append(out, c)
	}
	if len(shown) == 0 {
		delete(u.deleted, owner)
	} else {
		maps.DeleteFunc(gone, func(uid types.UID, _ bool) bool { return !shown[uid] })
	}
	return out
}

// prune forgets the records of accesses that are not live (an access
// whose records were revoked and that was then deleted is never listed
// again).
func (u *unseenRecords) prune(live map[types.UID]bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	notLive := func(uid types.UID, _ map[types.UID]bool) bool { return !live[uid] }
	maps.DeleteFunc(u.deleted, notLive)
	maps.DeleteFunc(u.created, notLive)
	maps.DeleteFunc(u.keys, func(uid types.UID, _ types.NamespacedName) bool { return !live[uid] })
}
