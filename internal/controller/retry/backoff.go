package retry

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Failure classifies why a reconcile could not finish, for the retry delay.
type Failure int

const (
	// None: the reconcile finished; the backoff is reset.
	None Failure = iota - 1
	// Transient failures clear by themselves: a backend unreachable or
	// timing out, a conflict, a server error. They are retried soon.
	Transient
	// Permanent failures need someone to act where no watch sees it: the
	// backend refusing buckety's credentials, a resource holding data that
	// buckety will not adopt, a name owned by another Buckety. They are
	// retried on a slower backoff; changes to the object itself retry at
	// once through the watch.
	Permanent
)

// Default retry delays. Transient: 1s doubling to 20s, so a backend that
// comes back is used again within 20 s whatever the outage's length.
// Permanent: 5s doubling to 2m, well under the drift re-check interval.
const (
	TransientBase = time.Second
	TransientMax  = 20 * time.Second
	PermanentBase = 5 * time.Second
	PermanentMax  = 2 * time.Minute
)

// Backoff tracks consecutive failures per object and hands out capped
// exponential retry delays, independent of the drift re-check interval.
// Success resets an object's count. The zero value uses the defaults.
//
// An object deleted without its last pass (its finalizer removed by hand)
// is never reset: a count not added to for StaleAfter is dropped, so
// objects created, failed and deleted in a loop cannot grow the map. A
// failing object is retried within PermanentMax, far less, so only a
// count that no longer matters goes (at worst an object's next failure
// waits the base delay again).
type Backoff struct {
	// Base and Max per Failure kind; zero means the default.
	TransientBase, TransientMax, PermanentBase, PermanentMax time.Duration

	mu       sync.Mutex
	failures map[types.UID]failureCount
	swept    time.Time
	// now is the clock (tests); nil is time.Now.
	now func() time.Time
}

// StaleAfter is how long a failure count is kept without another failure.
const StaleAfter = 10 * time.Minute

type failureCount struct {
	n    int
	last time.Time
}

// Next records one more failure of uid and returns how long to wait.
func (b *Backoff) Next(uid types.UID, f Failure) time.Duration {
	now := time.Now()
	if b.now != nil {
		now = b.now()
	}
	b.mu.Lock()
	if b.failures == nil {
		b.failures = map[types.UID]failureCount{}
	}
	if now.Sub(b.swept) >= StaleAfter {
		for k, c := range b.failures {
			if now.Sub(c.last) >= StaleAfter {
				delete(b.failures, k)
			}
		}
		b.swept = now
	}
	n := b.failures[uid].n
	b.failures[uid] = failureCount{n: n + 1, last: now}
	b.mu.Unlock()
	base, max := or(b.TransientBase, TransientBase), or(b.TransientMax, TransientMax)
	if f == Permanent {
		base, max = or(b.PermanentBase, PermanentBase), or(b.PermanentMax, PermanentMax)
	}
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Reset forgets uid's failures (after a success, or when it is deleted).
func (b *Backoff) Reset(uid types.UID) {
	b.mu.Lock()
	delete(b.failures, uid)
	b.mu.Unlock()
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Retry records the outcome of one reconcile of uid and returns res with
// RequeueAfter lowered to the backoff delay after a failure.
func (b *Backoff) Retry(uid types.UID, f Failure, res reconcile.Result) reconcile.Result {
	if f == None {
		b.Reset(uid)
		return res
	}
	if d := b.Next(uid, f); res.RequeueAfter == 0 || d < res.RequeueAfter {
		res.RequeueAfter = d
	}
	return res
}
