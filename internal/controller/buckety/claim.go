package buckety

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

// key is the claim key of resource on e: its service's claim space, with
// every backend sharing it.
func (r *Reconciler) key(e *backends.Entry, resource string) claims.Key {
	scope := e.Config.ClaimScope()
	return claims.Key{Backend: e.Name, Service: scope, Resource: resource, Siblings: r.Backends.ScopeMembers(scope)}
}

// claim makes sure no other Buckety owns the backend resource, and finds
// this Buckety's claim on it. Claims on other names that were never
// written to the backend (the template resolved differently before) are
// released first. A resource nobody holds a claim on is claimed by
// provision, after its adoption check, in the phase the check decides;
// f.claim stays nil until then. A Buckety that would take a new claim
// beyond its namespace's limit on the backend waits (limits.perNamespace).
func (r *Reconciler) claim(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	owned, err := r.Claims.OwnedCached(ctx, b.UID)
	if err != nil {
		f.claimErr = err
		return false
	}
	for i := range owned {
		cl := &owned[i]
		if cl.Spec.Phase == v1.ClaimClaimed && (cl.Spec.Backend != e.Name || cl.Spec.ResourceName != f.resourceName) {
			if err := r.letGo(ctx, cl); err != nil {
				f.claimErr = fmt.Errorf("release claim on %s: %w", cl.Spec.ResourceName, err)
				return false
			}
		}
	}
	k := r.key(e, f.resourceName)
	cl, other, err := r.Claims.Held(ctx, b, k, false)
	switch {
	case err != nil:
		f.claimErr = err
		return false
	case cl != nil:
		f.claim = cl
		r.Waiters.Done(ctrl.ObjectKeyFromObject(b))
		return true
	}
	if !r.withinLimit(ctx, b, e, f) {
		return false
	}
	if !other {
		return true
	}
	// Held by another Buckety, as far as the cache shows: Acquire reads it
	// fresh, and takes over a claim whose owner is gone.
	return r.acquire(ctx, b, e, f)
}

// withinLimit checks the backend's limits.perNamespace before this Buckety
// takes a new claim: the claims the namespace holds on the backend, as the
// cache shows them. Over the limit, the Buckety waits until one of them is
// released. Passes that may take a new claim in one namespace on one
// backend run one at a time (the gate is held until the pass ends), and a
// pass that took a claim lets the next one in only once the cache shows
// it: concurrent passes each counting the same cached claims would
// otherwise take one claim each past the limit.
func (r *Reconciler) withinLimit(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	l := e.Config.Limits
	if l == nil || (l.PerNamespace == 0 && !l.HasByteBudget()) {
		return true
	}
	if !r.holdGate(b, e, f) {
		return false
	}
	// Counted and summed, never written (withinBudget): the cache's own
	// objects, with the claims this controller wrote that the cache does
	// not show yet.
	items, err := r.Claims.InNamespace(ctx, e.Name, b.Namespace)
	if err != nil {
		f.claimErr = fmt.Errorf("count the claims of namespace %s: %w", b.Namespace, err)
		return false
	}
	// A claim on this very resource (retained from a deleted Buckety, or
	// held by another) is not counted: taking it over replaces it, and
	// one held by a live Buckety is a conflict, reported as such.
	counted := make([]v1.BucketyClaim, 0, len(items))
	retained := 0
	for i := range items {
		cl := &items[i]
		if cl.Spec.ResourceName == f.resourceName {
			continue
		}
		if claims.IsRetained(cl) {
			retained++
		}
		counted = append(counted, *cl)
	}
	if l.PerNamespace > 0 && len(counted) >= l.PerNamespace {
		f.limitExceeded = fmt.Sprintf("namespace %s has %d Bucketies on backend %s, the most its limits allow (%s: %d in buckety-controller.yaml)%s; this one waits until one of them is deleted", b.Namespace, len(counted), e.Name, e.Config.LimitsKey("perNamespace"), l.PerNamespace, retainedNote(retained))
		r.Waiters.Wait(ctrl.ObjectKeyFromObject(b), limitKey(e.Name, b.Namespace))
		return false
	}
	if !r.withinBudget(ctx, b, e, f, counted, nil) {
		if f.budgetExceeded != "" && retained > 0 {
			f.budgetExceeded += retainedNote(retained)
		}
		return false
	}
	return true
}

// retainedNote tells a tenant that n of the resources its namespace is
// counted for were retained from deleted Bucketies (retentionPolicy
// Retain), which it cannot see or release itself.
func retainedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", counting %d resources retained on the backend from deleted Bucketies of the namespace (retentionPolicy Retain), which count until a cluster maintainer releases them (kubectl get bucketyclaims shows them, RETAINED)", n)
}

// holdGate makes this pass hold its namespace's gate on the backend until
// it ends: passes that may take a new claim, or grow one under a budget,
// run one at a time, and a pass that wrote a claim lets the next one in
// only once the cache shows that write. A pass that finds the gate held
// does not wait for it: it reports false and sets f.gateBusy, and the
// pass ends without a status write, to be woken when the gate is freed
// (wakeOne) or retried (gateBackoff), whichever comes first. A
// waiting pass would hold one of the workers every namespace shares, for
// as long as the holder's backend calls take: a tenant's burst on a slow
// backend would park them all.
func (r *Reconciler) holdGate(b *v1.Buckety, e *backends.Entry, f *facts) bool {
	if f.releaseLimit != nil {
		return true
	}
	key := limitKey(e.Name, b.Namespace)
	g, _ := r.limitGates.LoadOrStore(key, &sync.Mutex{})
	mu := g.(*sync.Mutex)
	if !mu.TryLock() {
		f.gateBusy = true
		r.Waiters.Wait(ctrl.ObjectKeyFromObject(b), gateKey(key))
		return false
	}
	gateBackoff.Reset(b.UID)
	// Waiting for the gate no more (what the pass goes on to wait for, it
	// registers again).
	r.Waiters.Done(ctrl.ObjectKeyFromObject(b))
	f.releaseLimit = func() {
		if f.claim != nil {
			r.awaitCached(f.claim)
		}
		mu.Unlock()
		r.wakeOne(gateKey(key))
	}
	return true
}

func gateKey(limit string) string { return "gate/" + limit }

// wakeOne enqueues one of the Bucketies waiting for key (a gate just
// freed), as a lock hands itself to one waiter: waking all would have
// every one of a burst try the gate again after each pass. The wake is
// not waited for: one the queue cannot take now is made good by the
// waiter's own retry (gateBackoff).
func (r *Reconciler) wakeOne(key string) {
	if r.Released == nil {
		return
	}
	waiting := r.Waiters.Waiting(key)
	if len(waiting) == 0 {
		return
	}
	nn := waiting[0]
	r.Waiters.Done(nn)
	select {
	case r.Released <- wakeEvent(nn):
	default:
	}
}

// acquire takes the claim through Store.Acquire (phase Claimed, the
// adoption check still to run) or reports the conflict.
func (r *Reconciler) acquire(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	k := r.key(e, f.resourceName)
	cl, conflict, err := r.Claims.Acquire(ctx, b, k)
	switch {
	case err != nil:
		f.claimErr = err
		return false
	case conflict != nil:
		r.conflict(ctx, b, e, k, conflict, f)
		return false
	}
	f.claim = cl
	r.Waiters.Done(ctrl.ObjectKeyFromObject(b))
	return true
}

// conflict records that another Buckety owns the resource. The tenant is
// told only what it may know: the owner's name when it is in the same
// namespace, otherwise only that another Buckety owns it. The owner is
// the maintainer's to know: the log and buckety_name_conflicts_total
// carry it. The Buckety waits for the claim's release.
func (r *Reconciler) conflict(ctx context.Context, b *v1.Buckety, e *backends.Entry, k claims.Key, c *claims.Conflict, f *facts) {
	f.conflict = c
	r.Waiters.Wait(ctrl.ObjectKeyFromObject(b), claimKey(k.Name()))
	if cond := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); cond != nil && cond.Reason == v1.ReasonNameConflict {
		return // reported in this episode
	}
	metrics.NameConflicts.WithLabelValues(e.Name).Inc()
	logf.FromContext(ctx).Info("name conflict: the backend resource is another Buckety's", "backend", e.Name, "resource", f.resourceName, "owner", c.Owner, "ownerPhase", c.Phase)
	r.event(b, corev1.EventTypeWarning, v1.EventNameConflict, v1.EventActionClaim, conflictMessage(f.resourceName, e.Name, c))
}

// conflictMessage is what a tenant reads about a conflict.
func conflictMessage(resource, backend string, c *claims.Conflict) string {
	owner := "another Buckety"
	if c.SameNamespace {
		owner = "Buckety " + c.Owner
	}
	return fmt.Sprintf("backend resource %s on backend %s is owned by %s; this Buckety will not touch it (deleting this Buckety never deletes it)", resource, backend, owner)
}

func claimKey(name string) string { return "claim/" + name }

func limitKey(backend, namespace string) string { return "limit/" + backend + "/" + namespace }

// letGo gives up cl (claims.Store.LetGo: a resource left on the backend
// stays counted, as retained) and wakes those waiting for its release.
func (r *Reconciler) letGo(ctx context.Context, cl *v1.BucketyClaim) error {
	if _, err := r.Claims.LetGo(ctx, cl); err != nil {
		return err
	}
	r.wake(ctx, cl)
	return nil
}

// wake enqueues the Bucketies waiting for a claim that was just released:
// those waiting for its name, and those waiting for their namespace to
// fall under the backend's limit.
func (r *Reconciler) wake(ctx context.Context, cl *v1.BucketyClaim) {
	if r.Released == nil {
		return
	}
	keys := []string{claimKey(cl.Name), limitKey(cl.Spec.Backend, cl.Spec.Owner.Namespace)}
	for _, k := range keys {
		for _, nn := range r.Waiters.Waiting(k) {
			select {
			case r.Released <- wakeEvent(nn):
			case <-ctx.Done():
				return
			}
		}
	}
}

// wakeEvent is the event that enqueues the Buckety nn.
func wakeEvent(nn types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: nn.Namespace, Name: nn.Name}}}
}

// awaitCached waits, at most a few seconds, until the cache shows the
// claim as this pass last wrote it, so the next pass through its gate
// counts it.
func (r *Reconciler) awaitCached(cl *v1.BucketyClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		var got v1.BucketyClaim
		if err := r.Client.Get(ctx, ctrl.ObjectKeyFromObject(cl), &got); err == nil && (cl.ResourceVersion == "" || got.ResourceVersion == cl.ResourceVersion) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
