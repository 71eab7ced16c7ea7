package buckety

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
)

// The service a claim's resource lives on (drivers.ServiceIdentifier). A
// backend's config may be pointed at another service of the same kind: a
// kadm backend's seedBrokers changed to another Kafka cluster, for a
// migration or by a typo that reaches staging. There the owner registry
// knows nothing of this installation, so no record keeps a Buckety out of
// a stranger's topic of its name: its pass would converge that topic to
// the Buckety's parameters (a lower retention.ms deletes the stranger's
// data), record it as the Buckety's, grant its accesses on it, switch
// their Secrets to it, and retentionPolicy Delete would delete it. So a
// claim records the identity of the service its resource was created or
// adopted on (spec.serviceID), and a Buckety whose backend reaches
// another writes nothing there (ServiceChanged) until a maintainer points
// the backend back, or clears the field once the move is intended and
// the resources copied.
//
// The identity is asked of the backend once per process (the driver
// keeps it), so a pass costs no request for it after the first.

// sameService reports whether claim cl (nil: none yet) may be acted on
// through e: its resource is on the service e reaches, or its claim
// records no service, or e's driver cannot tell. id is the identity of
// the service e reaches ("" when it has none). False, with f set, when
// the claim records another service, or e could not be asked.
func (r *Reconciler) sameService(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, cl *v1.BucketyClaim) (id string, ok bool) {
	id, err := drivers.ServiceIDOf(ctx, e.Backend)
	if err != nil {
		f.Record(fmt.Errorf("read the identity of the service backend %s reaches: %w", e.Name, err))
		return "", false
	}
	if cl == nil || cl.Spec.ServiceID == "" || cl.Spec.ServiceID == id {
		return id, true
	}
	if id == "" {
		// The service answered without an identity (a proxy, a broker
		// in a rollout): nothing is told, and nothing written; asked
		// again on the next pass.
		f.Record(noServiceID(e, cl))
		return "", false
	}
	msg := serviceChanged(e, cl, id)
	f.problem = &backends.Problem{Condition: v1.ConditionBackendUnavailable, Reason: v1.ReasonServiceChanged, Message: msg}
	// Until someone acts: the slow backoff.
	f.refused = true
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c == nil || c.Reason != v1.ReasonServiceChanged || c.ObservedGeneration != b.Generation {
		r.event(b, corev1.EventTypeWarning, v1.ReasonServiceChanged, v1.EventActionProvision, msg)
	}
	return "", false
}

// noServiceID is the error of a backend whose service answered without
// an identity while claim cl records one: asked again, never taken for
// another service (a deletion would then finish as Retain for good).
func noServiceID(e *backends.Entry, cl *v1.BucketyClaim) error {
	return fmt.Errorf("backend %s's service answered without an identity, and claim %s records %s on service %q: asked again before anything is written", e.Name, cl.Name, cl.Spec.ResourceName, cl.Spec.ServiceID)
}

// serviceChanged says, for a cluster maintainer, that claim cl's resource
// is on another service than the one backend e reaches now (id), and the
// way out.
func serviceChanged(e *backends.Entry, cl *v1.BucketyClaim, id string) string {
	return serviceMoved(e, cl, id) + fmt.Sprintf(": the backend's address was changed (a kadm backend's seedBrokers pointed at another cluster), and the resource of that name there may be someone else's, so buckety writes nothing on it, grants nothing on it, and neither drains nor deletes it; if the move is intended and the resources were copied there, clear the claim's serviceID: kubectl patch bucketyclaim %s --type merge -p '{\"spec\":{\"serviceID\":null}}'; otherwise point backend %s back at the service it reached",
		cl.Name, e.Name)
}

// serviceMoved says that claim cl's resource is on another service than
// the one backend e reaches now (id).
func serviceMoved(e *backends.Entry, cl *v1.BucketyClaim, id string) string {
	now := fmt.Sprintf("service %q", id)
	if id == "" {
		now = "a service that reports no identity"
	}
	return fmt.Sprintf("backend %s reaches %s, but %s was created or adopted on service %q (claim %s, spec.serviceID)", e.Name, now, cl.Spec.ResourceName, cl.Spec.ServiceID, cl.Name)
}

// otherService says why a Buckety being deleted leaves claim cl's
// resource as it is: its backend, configured, reaches another service
// than the one the claim records ("" when it does not, or either cannot
// tell).
func (r *Reconciler) otherService(ctx context.Context, cl *v1.BucketyClaim) (string, error) {
	if cl.Spec.ServiceID == "" {
		return "", nil
	}
	e, ok := r.Backends.Get(cl.Spec.Backend)
	if !ok {
		return "", nil
	}
	id, err := drivers.ServiceIDOf(ctx, e.Backend)
	if err != nil {
		return "", fmt.Errorf("read the identity of the service backend %s reaches: %w", e.Name, err)
	}
	switch id {
	case cl.Spec.ServiceID:
		return "", nil
	case "":
		return "", noServiceID(e, cl)
	}
	// Short: the Retained event adds what the claim keeps counting.
	return serviceMoved(e, cl, id), nil
}

// stampService records on this pass's claim, made before claims recorded
// it, the service its resource is on, once this pass has read the owner
// record there naming this Buckety (judgeOwnerRecord): the resource is
// this Buckety's on the service e reaches. A record this process wrote
// proves nothing (it may have been pointed at the wrong service since it
// started: an upgrade that changed seedBrokers too found no record there,
// wrote one, and read it back on its next pass, or another replica's
// did), so no claim is stamped on the controller's own word
// (v1.ClaimServiceUnprovenAnnotation, set before such a write). False,
// with f.claimErr, when the claim could not be written.
func (r *Reconciler) stampService(ctx context.Context, e *backends.Entry, f *facts) bool {
	cl := f.claim
	if cl == nil || cl.Spec.ServiceID != "" || (cl.Spec.Phase != v1.ClaimCreated && cl.Spec.Phase != v1.ClaimAdopted && cl.Spec.Phase != v1.ClaimCreating) {
		return true
	}
	if cl.Annotations[v1.ClaimServiceUnprovenAnnotation] == "true" {
		return true
	}
	id, err := drivers.ServiceIDOf(ctx, e.Backend)
	if err != nil || id == "" {
		// Asked again on the next pass.
		return true
	}
	if err := r.Claims.RecordServiceID(ctx, cl, id); err != nil {
		f.claimErr = err
		return false
	}
	return true
}
