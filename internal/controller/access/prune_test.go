package access

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestRememberedSecretsArePruned: what the reconciler remembers of each
// access's Secret is dropped once the access is gone, even when it went
// without a deletion pass (its finalizer removed by hand), so a
// create-then-strip loop does not grow the controller's memory.
func TestRememberedSecretsArePruned(t *testing.T) {
	var v verifiedSecrets
	var k knownSecrets
	for _, uid := range []types.UID{"live", "stripped-1", "stripped-2"} {
		v.record(uid, "1", map[string][]byte{"k": []byte("v")})
		k.put(uid, "1", "p-"+string(uid), "s")
	}
	live := map[types.UID]bool{"live": true}
	v.prune(live)
	k.prune(live)
	if len(v.m) != 1 || v.resourceVersion("live") != "1" {
		t.Errorf("verified: want only the live access kept, got %v", v.m)
	}
	if _, _, ok := k.get("live", "1", "p-live", nil); len(k.m) != 1 || !ok {
		t.Errorf("secrets: want only the live access kept, got %v", k.m)
	}
}
