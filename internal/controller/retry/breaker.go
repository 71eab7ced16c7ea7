package retry

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// A backend that stops answering (a broker or S3 endpoint black-holed, a
// network partition) makes each pass that reaches it wait out its
// requestTimeout, and every object on it retries at most TransientMax
// (20 s) apart: some thirty Bucketies on a hung backend with a 30 s
// requestTimeout kept all sixteen workers waiting on it, and every other
// backend's objects waited for a worker. The Breaker holds those passes
// back instead, per backend:
//
//   - a backend is down once Threshold passes in a row found it
//     unavailable (drivers.IsUnavailable) with no pass between getting an
//     answer from it, and up again at the first pass that gets one;
//   - while it is down, an object whose status already says so for its
//     generation (FoundUnreachable) runs its pass only as one of Probes
//     passes at a time; the others end at once, without a status write
//     (what it says is still true) and without a backend request, and are
//     retried on their backoff, as a failed pass would be;
//   - an object whose status does not say so yet (new, edited, or Ready
//     until now) runs its pass, and says so: one pass each per episode.
//
// Deletions are not held back. Each controller (Buckety, BucketyAccess)
// has one Breaker for every shard it holds; nil holds nothing back.
type Breaker struct {
	// Threshold is how many passes in a row must find a backend
	// unavailable before it is down; 0: DefaultBreakerThreshold.
	Threshold int
	// Probes is how many held-back Bucketies' passes may try a backend
	// that is down at once; 0: DefaultBreakerProbes.
	Probes int

	mu       sync.Mutex
	backends map[string]*breakerState
}

// The Breaker's defaults: three passes in a row, two probes at a time.
const (
	DefaultBreakerThreshold = 3
	DefaultBreakerProbes    = 2
)

// breakerState is one backend's: the passes in a row that found it
// unavailable, and the probes running while it is down.
type breakerState struct {
	failed, probing int
}

// Outcome is what a pass learned of its backend.
type Outcome int

const (
	// OutcomeNone: the pass did not get to ask the backend (it stopped
	// before, on a claim, a limit or a parameter).
	OutcomeNone Outcome = iota
	// OutcomeUnavailable: the backend did not answer.
	OutcomeUnavailable
	// OutcomeAnswered: the backend answered, whatever it said.
	OutcomeAnswered
)

func (br *Breaker) state(backend string) *breakerState {
	if br.backends == nil {
		br.backends = map[string]*breakerState{}
	}
	s, ok := br.backends[backend]
	if !ok {
		s = &breakerState{}
		br.backends[backend] = s
	}
	return s
}

func (br *Breaker) threshold() int { return positiveOr(br.Threshold, DefaultBreakerThreshold) }
func (br *Breaker) probes() int    { return positiveOr(br.Probes, DefaultBreakerProbes) }

// positiveOr is v when positive, else def.
func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// Admit says whether a pass on backend may run: found says the Buckety's
// status already records the backend unavailable for its generation. A
// pass admitted as a probe (probe true) holds one of the backend's probe
// slots until Done.
func (br *Breaker) Admit(backend string, found bool) (probe, ok bool) {
	if br == nil {
		return false, true
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	s := br.state(backend)
	if !found || s.failed < br.threshold() {
		return false, true
	}
	if s.probing >= br.probes() {
		return false, false
	}
	s.probing++
	return true, true
}

// Done records what an admitted pass learned of backend, and frees its
// probe slot. It reports whether the backend went down or came up with
// this pass, for the log.
func (br *Breaker) Done(backend string, probe bool, o Outcome) (wentDown, cameUp bool) {
	if br == nil {
		return false, false
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	s := br.state(backend)
	if probe {
		s.probing--
	}
	switch o {
	case OutcomeUnavailable:
		s.failed++
		return s.failed == br.threshold(), false
	case OutcomeAnswered:
		was := s.failed >= br.threshold()
		s.failed = 0
		return false, was
	}
	return false, false
}

// Release is Done for a pass of one of kind (Bucketies, accesses), and
// logs the backend going down or coming up with it.
func (br *Breaker) Release(ctx context.Context, kind, backend string, probe bool, o Outcome) {
	switch down, up := br.Done(backend, probe, o); {
	case down:
		threshold, probes := br.Limits()
		log.FromContext(ctx).Info("backend stopped answering: the passes of its "+kind+" that found it unavailable wait for a probe to get an answer", "backend", backend, "passesInARow", threshold, "probes", probes)
	case up:
		log.FromContext(ctx).Info("backend answers again: every pass of its "+kind+" runs", "backend", backend)
	}
}

// HeldBackRetry is when a pass the Breaker held back runs again: as a
// failed pass would (b's Transient backoff; TransientMax without one).
func HeldBackRetry(b *Backoff, uid types.UID) time.Duration {
	if b == nil {
		return TransientMax
	}
	return b.Next(uid, Transient)
}

// Down reports whether backend is down: passes that found it unavailable
// are held back.
func (br *Breaker) Down(backend string) bool {
	if br == nil {
		return false
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.state(backend).failed >= br.threshold()
}

// FoundUnreachable reports whether conditions, of an object at
// generation, record its backend unreachable for that generation
// (BackendUnavailable True, BackendUnreachable).
func FoundUnreachable(conditions []metav1.Condition, generation int64) bool {
	c := meta.FindStatusCondition(conditions, v1.ConditionBackendUnavailable)
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1.ReasonBackendUnreachable && c.ObservedGeneration == generation
}

// Outcome is what a pass that recorded failure b learned of its backend:
// unavailable when b says so; answered when asked says the pass got an
// answer of the backend otherwise; none when it did not ask.
func (b *BackendFailure) Outcome(asked bool) Outcome {
	switch {
	case b.Unavailable != nil:
		return OutcomeUnavailable
	case asked:
		return OutcomeAnswered
	}
	return OutcomeNone
}

// Limits are the threshold and probes in effect, for the log.
func (br *Breaker) Limits() (threshold, probes int) { return br.threshold(), br.probes() }
