package buckety

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/testhook"
)

// provision converges the backend resource through the driver, and on the
// way records in the claim, before each backend write it depends on, how
// this Buckety came to own the resource:
//
//   - No claim yet, or Claimed (a claim taken over from a deleted owner, or
//     left by an older controller): the adoption check runs, and its
//     verdict is recorded (inspectAndRecord). When the tenant asks to adopt
//     (spec.adoption) and the backend allows it, an existing resource,
//     with content or not, is recorded Adopting. Otherwise a resource
//     holding content is refused and the claim released, and an empty one
//     is recorded Adopted. A missing one is recorded Creating (the intent)
//     before Ensure may create it.
//   - Adopting: see settleAdoption; nothing is written to the resource
//     until the adoption settles as Adopted.
//   - Creating, in the pass that recorded it: Ensure reporting that it
//     created the resource makes it Created; a resource that appeared
//     between the check and Ensure makes it Adopted.
//   - Creating, found by a later pass (a crash or a lost write came
//     between): the resource is buckety's, Created.
//
// The sticky status fields are then copied from the claim.
func (r *Reconciler) provision(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) (bool, error) {
	cl := f.claim
	justRecorded := false
	if cl == nil || cl.Spec.Phase == v1.ClaimClaimed {
		var ok bool
		if cl, justRecorded, ok = r.inspectAndRecord(ctx, b, e, f, cl); !ok {
			return false, nil
		}
		f.claim = cl
	}
	if cl.Spec.Phase == v1.ClaimAdopting && !r.settleAdoption(ctx, b, e, f) {
		return false, nil
	}
	res, err := e.Backend.Ensure(ctx, drivers.Resource{Name: f.resourceName, Parameters: b.Spec.Parameters, MaxAge: r.maxAge(e)})
	var drift *drivers.DriftError
	switch {
	case errors.As(err, &drift):
		f.drift = drift
		metrics.DriftDetected.WithLabelValues(e.Name, "false").Inc()
		r.event(b, corev1.EventTypeWarning, v1.EventDriftUnrepairable, v1.EventActionReconcile, drift.Error())
	case err != nil:
		f.Record(err)
		return false, nil
	}
	if res.Created {
		testhook.Pause(ctx, testhook.AfterCreate)
	}
	first := b.Status.Provenance == "" || b.Status.BackendResourceName != cl.Spec.ResourceName
	if cl.Spec.Phase == v1.ClaimCreating {
		phase := v1.ClaimCreated
		if justRecorded && !res.Created {
			phase = v1.ClaimAdopted
		}
		if err := r.Claims.Advance(ctx, cl, phase); err != nil {
			f.claimErr = err
			return false, nil
		}
	}
	// With drift the resource exists and is usable; the drift is reported.
	f.provisioned = true
	f.shortfalls = res.Shortfalls
	provenance := v1.ProvenanceCreated
	if cl.Spec.Phase == v1.ClaimAdopted {
		provenance = v1.ProvenanceAdopted
	}
	// The status mirrors the claim; a hand-edited status is put back.
	b.Status.Backend = e.Name
	b.Status.Driver = e.Driver.Name()
	if b.Status.DriverMajor == nil {
		major := e.Driver.Version().Major
		b.Status.DriverMajor = &major
	}
	b.Status.BackendResourceName = cl.Spec.ResourceName
	b.Status.Provenance = provenance
	if first {
		msg := fmt.Sprintf("%s %s on backend %s (driver %s %s)", strings.ToLower(string(provenance)), f.resourceName, e.Name, e.Driver.Name(), e.Driver.Version())
		if da := b.Spec.DefaultAccess; da != nil {
			// One event, not a second one when the access is created.
			msg += fmt.Sprintf("; implicit BucketyAccess %s writes Secret %s", b.Name, da.CredentialsSecretName)
		}
		r.event(b, corev1.EventTypeNormal, v1.EventProvisioned, v1.EventActionProvision, msg)
	} else if len(res.Changes) > 0 {
		reason := v1.EventUpdated
		if b.Generation == b.Status.ObservedGeneration {
			reason = v1.EventDriftRepaired
			metrics.DriftDetected.WithLabelValues(e.Name, "true").Inc()
			metrics.DriftRepaired.WithLabelValues(e.Name).Inc()
		}
		r.event(b, corev1.EventTypeNormal, reason, v1.EventActionReconcile, strings.Join(res.Changes, "; "))
	}
	b.Status.DriverBuildVersion = e.Driver.Version().String()
	return true, nil
}
