package shared

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Claims records which Buckety owns which backend resource, so two Bucketies
// resolving to the same topic or bucket cannot both claim it. Persisted
// claims (stamped status) are found through the ClaimIndex; this in-memory
// registry closes the window between a claim and its status write. The
// leader-elected controller is the only writer, so one process suffices.
type Claims struct {
	mu     sync.Mutex
	owners map[string]types.UID
}

// ClaimKey identifies a backend resource.
func ClaimKey(backend, resource string) string { return backend + "/" + resource }

// Claim gives key to uid unless another UID holds it, returning the holder.
func (c *Claims) Claim(key string, uid types.UID) (types.UID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owners == nil {
		c.owners = map[string]types.UID{}
	}
	if cur, ok := c.owners[key]; ok && cur != uid {
		return cur, false
	}
	c.owners[key] = uid
	return uid, true
}

// Release drops uid's claim on key.
func (c *Claims) Release(key string, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owners[key] == uid {
		delete(c.owners, key)
	}
}
