package access

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// A credential record this controller deleted stays in its cache until the
// watch brings the deletion, which on a busy API server takes longer than
// the next pass of the access (withdrawRetry is a second). A pass that
// trusted the cache then took the revoked credential for the current one
// and granted it again: the upsert made the deleted user again, with no
// record, and the next pass, issuing the access's first credential under
// the same name, found "a principal buckety did not create" and held the
// access at PrincipalConflict for good. So the records this controller
// deleted are remembered, and left out of every cached read of the
// access's credentials, until its cache stops showing them.

// revokedRecords are the UIDs of the credential records this controller
// deleted that its cache may still show, by the UID of their access.
type revokedRecords struct {
	mu sync.Mutex
	m  map[types.UID]map[types.UID]bool
}

// add remembers that record rec of access owner was deleted.
func (r *revokedRecords) add(owner, rec types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.UID]map[types.UID]bool{}
	}
	if r.m[owner] == nil {
		r.m[owner] = map[types.UID]bool{}
	}
	r.m[owner][rec] = true
}

// filter drops from creds, the cached records of access owner, those this
// controller deleted, and forgets the deletions the cache already shows
// (a UID is never used again, so a record gone from the cache stays gone).
func (r *revokedRecords) filter(owner types.UID, creds []v1.BucketyCredential) []v1.BucketyCredential {
	r.mu.Lock()
	defer r.mu.Unlock()
	gone := r.m[owner]
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
		delete(r.m, owner)
	} else {
		maps.DeleteFunc(gone, func(uid types.UID, _ bool) bool { return !shown[uid] })
	}
	return out
}

// prune forgets the deletions of accesses that are not live (an access
// whose records were revoked and that was then deleted is never listed
// again).
func (r *revokedRecords) prune(live map[types.UID]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	maps.DeleteFunc(r.m, func(uid types.UID, _ map[types.UID]bool) bool { return !live[uid] })
}
