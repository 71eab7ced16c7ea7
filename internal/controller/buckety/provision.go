package buckety

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/testhook"
)

// provision converges the backend resource through the driver, and on the
// way records in the claim, before each backend write it depends on, how
// this Buckety came to own the resource:
//
//   - No claim yet, or Claimed (a claim taken over from a deleted owner, or
//     left by an older controller): the adoption check runs, and its
//     verdict is recorded (inspectAndRecord): a missing resource Created
//     (the intent, in its final phase) before Ensure may create it; an
//     existing one Adopting, unless the keys to adopt it are missing and
//     it holds content or was made outside buckety (no owner record, no
//     claim): refused, and a Claimed claim released.
//   - Adopting: see settleAdoption; nothing is written to the resource
//     until the adoption settles as Adopted.
//   - Created, in the pass that recorded it: Ensure creates the resource
//     and writes nothing to one that appeared since the check
//     (CreateOnly): one someone else created meanwhile makes the claim
//     Adopting, to be settled like any existing resource. A create the
//     backend refuses outright makes the claim Claimed again
//     (nothingCreated), in any pass.
//   - Created, found by a later pass (a crash or a lost write may have
//     come between the claim and the create): the resource is buckety's.
//     So is a claim left Creating by an older controller, which is
//     advanced to Created.
//
// Every call is made with the location parameters the claim recorded
// (claims.Effective), and a spec whose location parameters differ from
// them is reported, not acted on. A write on the strength of a claim read
// from the cache is preceded by a fresh read of the claim
// (drivers.Resource.BeforeWrite); a claim this pass wrote needs none.
// The sticky status fields are then copied from the claim. A claim that
// records another service than the one e reaches stops the pass before
// any of it (sameService).
func (r *Reconciler) provision(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) (bool, error) {
	f.askedBackend = true
	cl := f.claim
	// Nothing is asked of a service the claim's resource is not on; a
	// claim made now records the one e reaches.
	id, ok := r.sameService(ctx, b, e, f, cl)
	if !ok {
		return false, nil
	}
	ctx = claims.WithServiceID(ctx, id)
	justRecorded, fresh := false, false
	var in *drivers.Inspection
	if cl == nil || cl.Spec.Phase == v1.ClaimClaimed {
		if cl, justRecorded, in, ok = r.inspectAndRecord(ctx, b, e, f, cl); !ok {
			return false, nil
		}
		f.claim = cl
		fresh = in != nil
		// A claim taken over from a deleted Buckety records where that
		// one's resource is.
		if _, ok := r.sameService(ctx, b, e, f, cl); !ok {
			return false, nil
		}
	}
	locKeys := drivers.LocationParameters(e.Driver)
	if msg := claims.LocationChanged(locKeys, cl, f.params); msg != "" {
		f.locationChanged = msg
		return false, nil
	}
	if cl.Spec.Location == nil && cl.Spec.Phase != v1.ClaimAdopting {
		// A claim made before claims recorded the location: record the
		// spec's now, once.
		if err := r.Claims.RecordLocation(ctx, cl, claims.Location(locKeys, f.params)); err != nil {
			f.claimErr = err
			return false, nil
		}
	}
	at := backendResource(e, f.resourceName, f.params, cl)
	f.params = at.Parameters
	if cl.Spec.Phase == v1.ClaimAdopting && !r.settleAdoption(ctx, b, e, f, in, at.Parameters) {
		return false, nil
	}
	if !r.budgetFits(ctx, b, e, f, cl, at.Parameters) {
		return false, nil
	}
	if e.Config.HandOverTo() != "" && cl.Spec.Phase != v1.ClaimAdopting {
		r.handOver(ctx, b, e, f, at)
		return false, nil
	}
	// A resource this pass found missing has no record to check, and one
	// this pass's adoption check found has had its record read; any other
	// is checked before it is written to (once per process).
	if !justRecorded && !fresh && !r.checkOwner(ctx, b, e, f, at) {
		return false, nil
	}
	// A claim an earlier pass recorded Created, for a resource that holds
	// someone else's content: adopted or refused as any existing one.
	if !justRecorded && !fresh {
		why, unrecorded, err := r.createdElsewhere(ctx, b, e, cl, at)
		if err != nil {
			f.Record(err)
			return false, nil
		}
		if unrecorded {
			if !r.settleUnrecorded(e, f) {
				return false, nil
			}
			r.unrecorded.Delete(memoKey(e, f.resourceName))
		}
		if why != "" {
			if err := r.Claims.Advance(ctx, cl, v1.ClaimAdopting); err != nil {
				f.claimErr = err
				return false, nil
			}
			f.claimErr = errors.New(why + "; checking it as an existing resource before anything is written to it")
			return false, nil
		}
	}
	want := at
	want.MaxAge, want.CreateOnly = r.maxAge(e), justRecorded
	if !fresh {
		want.BeforeWrite = func(ctx context.Context) error {
			if err := r.Claims.Confirm(ctx, cl); err != nil {
				return err
			}
			return r.confirmOwner(ctx, b, e, f, at)
		}
	}
	began := time.Now()
	res, ok := r.ensure(ctx, b, e, f, want)
	if !ok {
		return false, nil
	}
	if res.Created {
		testhook.Pause(ctx, testhook.AfterCreate)
	}
	first := b.Status.Provenance == "" || b.Status.BackendResourceName != cl.Spec.ResourceName
	phase := cl.Spec.Phase
	switch {
	case justRecorded && !res.Created:
		// Someone else created it between the check and the create:
		// nothing was written to it; adopt it as any existing one.
		phase = v1.ClaimAdopting
	case phase == v1.ClaimCreating:
		phase = v1.ClaimCreated
	}
	if phase != cl.Spec.Phase {
		if err := r.Claims.Advance(ctx, cl, phase); err != nil {
			f.claimErr = err
			return false, nil
		}
		if phase == v1.ClaimAdopting {
			f.claimErr = errors.New("the resource appeared between the adoption check and the create; checking it again before adopting it")
			return false, nil
		}
	}
	if !r.keepOwner(ctx, b, e, f, at, res.Created, res.Created && (res.CreateUnproven || time.Since(began) >= r.ownerSettle()/2)) {
		return false, nil
	}
	// Created, and recorded as this Buckety's: a claim taken over from a
	// deleted Buckety drops the record of it only now (not when Created
	// was recorded, before a create that may fail or never run).
	if err := r.Claims.CreateSucceeded(ctx, cl); err != nil {
		f.claimErr = err
		return false, nil
	}
	if res.CreateUnproven {
		// The driver wrote nothing but the create to a bucket that may
		// have been someone else's; now that its record says it is this
		// Buckety's, its parameters are converged.
		want.CreateOnly = false
		again, ok := r.ensure(ctx, b, e, f, want)
		if !ok {
			return false, nil
		}
		if again.Created {
			// Deleted out of band since, and created again: its record
			// is read again on the next pass.
			f.Record(fmt.Errorf("%s was deleted on the backend while it was being created; creating it again", f.resourceName))
			return false, nil
		}
		res.Changes = append(res.Changes, again.Changes...)
		res.Shortfalls = again.Shortfalls
	}
	// With drift the resource exists and is usable; the drift is reported.
	f.provisioned = true
	f.shortfalls = res.Shortfalls
	r.mirrorClaim(b, e, cl, res.Changes, first, f)
	r.holdProvisioned(b, f)
	return true, nil
}

// ensure calls the driver's Ensure with want and sorts its error: false
// when the pass stops here (the reason in f), true with drift (in f) or
// none.
func (r *Reconciler) ensure(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, want drivers.Resource) (drivers.EnsureResult, bool) {
	res, err := e.Backend.Ensure(ctx, want)
	var drift *drivers.DriftError
	var lost *claims.LostError
	switch {
	case errors.Is(err, errNotOwned):
		// Reported in f (confirmOwner); nothing was written.
		return res, false
	case errors.As(err, &lost):
		f.claimErr = err
		return res, false
	case errors.As(err, &drift):
		f.drift = drift
		metrics.DriftDetected.WithLabelValues(e.Name, "false").Inc()
		r.event(b, corev1.EventTypeWarning, v1.EventDriftUnrepairable, v1.EventActionReconcile, drift.Error())
	case err != nil:
		f.Record(err)
		f.refused = drivers.IsRefused(err)
		r.replacedByDriver(b, f, err)
		if drivers.IsNotCreated(err) {
			f.createRefused = true
			r.nothingCreated(ctx, b, f)
		}
		return res, false
	}
	return res, true
}

// nothingCreated moves the claim back to Claimed when the backend refused
// its create outright (drivers.NotCreatedError): nothing was made, whatever
// the Buckety's status says (a tenant may write it). A resource someone
// else makes under the name later then goes through the adoption check as
// any existing one, instead of being taken, empty and unrecorded, for the
// one a crash or a lost answer kept this Buckety from recording
// (createdElsewhere): a tenant whose create the backend always refuses (a
// replication factor above the broker count) would otherwise hold the
// name as created, and take the next topic of that name anyone made. The
// name stays reserved for the Buckety; a claim taken over from a deleted
// Buckety keeps the record of it (claims.Store.Advance), so the next pass
// judges the name as this one did. A failed write leaves the claim
// Created, and the next refused create tries again.
func (r *Reconciler) nothingCreated(ctx context.Context, b *v1.Buckety, f *facts) {
	cl := f.claim
	if cl == nil || (cl.Spec.Phase != v1.ClaimCreated && cl.Spec.Phase != v1.ClaimCreating) {
		return
	}
	if err := r.Claims.Advance(ctx, cl, v1.ClaimClaimed); err != nil {
		f.claimErr = err
	}
}

// mirrorClaim copies the sticky fields of the claim into the status (a
// hand-edited status is put back) and tells what this pass did with an
// event where a person should see it: a resource adopted, a Buckety moved
// to another resource, or a resource changed (a parameter applied, or drift
// repaired). A resource created for a new Buckety, the expected outcome of
// every apply, is told by the status alone (Provisioned, with its
// lastTransitionTime): an event per create would be an API write per
// Buckety that says nothing the condition does not.
func (r *Reconciler) mirrorClaim(b *v1.Buckety, e *backends.Entry, cl *v1.BucketyClaim, changes []string, first bool, f *facts) {
	provenance := v1.ProvenanceCreated
	if cl.Spec.Phase == v1.ClaimAdopted {
		provenance = v1.ProvenanceAdopted
	}
	moved := b.Status.BackendResourceName != "" && b.Status.BackendResourceName != cl.Spec.ResourceName
	// The status mirrors the claim; a hand-edited status is put back.
	b.Status.Backend = e.Name
	b.Status.Driver = e.Driver.Name()
	if b.Status.DriverMajor == nil {
		major := e.Driver.Version().Major
		b.Status.DriverMajor = &major
	}
	b.Status.BackendResourceName = cl.Spec.ResourceName
	b.Status.Provenance = provenance
	b.Status.ParameterDefaults = f.defaults
	b.Status.EffectiveParameters = effectiveParameters(f.params)
	switch {
	case first && (provenance == v1.ProvenanceAdopted || moved):
		msg := fmt.Sprintf("%s %s on backend %s (driver %s %s)", strings.ToLower(string(provenance)), f.resourceName, e.Name, e.Driver.Name(), e.Driver.Version())
		if da := b.Spec.DefaultAccess; da != nil {
			// One event, not a second one when the access is created.
			msg += fmt.Sprintf("; implicit BucketyAccess %s writes Secret %s", b.Name, da.CredentialsSecretName)
		}
		r.event(b, corev1.EventTypeNormal, v1.EventProvisioned, v1.EventActionProvision, msg)
	case first:
		// Created for a new Buckety: the status tells it.
	case len(changes) > 0:
		reason := v1.EventUpdated
		if b.Generation == b.Status.ObservedGeneration {
			reason = v1.EventDriftRepaired
			metrics.DriftDetected.WithLabelValues(e.Name, "true").Inc()
			metrics.DriftRepaired.WithLabelValues(e.Name).Inc()
		}
		r.event(b, corev1.EventTypeNormal, reason, v1.EventActionReconcile, strings.Join(changes, "; "))
	}
	b.Status.DriverBuildVersion = e.Driver.Version().String()
}

// effectiveParameters is status.effectiveParameters: params, what this
// pass provisioned the resource with (spec.parameters over the defaults in
// effect, the location parameters as the claim recorded them), copied so
// the status shares no map with the spec; nil when no key is set, so the
// field is left out.
func effectiveParameters(params map[string]string) map[string]string {
	if len(params) == 0 {
		return nil
	}
	return maps.Clone(params)
}
