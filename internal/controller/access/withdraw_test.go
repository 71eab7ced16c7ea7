package access

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// TestWithdrawWaitingForItsBackendBacksOff: a withdrawal whose credential
// is on a backend no longer in the config (revokeWaiting) waits for the
// maintainer, which no pass can hasten: it is retried on the slow backoff,
// growing, not each second (each pass lists the access's credential
// records). A withdrawal that only waits for its cache is finished a
// second later, as before.
func TestWithdrawWaitingForItsBackendBacksOff(t *testing.T) {
	r := &Reconciler{Backoff: &retry.Backoff{}}
	uid := types.UID("a1")
	cache := &facts{}
	if got := r.withdrawAgain(cache); got.RequeueAfter != withdrawRetry {
		t.Errorf("waiting for the cache: want a retry after %s, got %s", withdrawRetry, got.RequeueAfter)
	}
	if failure(cache) != retry.None {
		t.Errorf("waiting for the cache: want no failure, got %v", failure(cache))
	}
	waiting := &facts{revokeWaiting: "credential p1 is on backend gone, which is not in the controller config"}
	var last time.Duration
	for i := 0; i < 3; i++ {
		res := r.Backoff.Retry(uid, failure(waiting), r.withdrawAgain(waiting))
		if res.RequeueAfter < retry.PermanentBase || res.RequeueAfter <= last {
			t.Fatalf("pass %d waiting for its backend: want a growing retry of at least %s, got %s after %s", i+1, retry.PermanentBase, res.RequeueAfter, last)
		}
		last = res.RequeueAfter
	}
}
