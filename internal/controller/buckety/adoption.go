package buckety

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/testhook"
)

// inspectAndRecord runs the adoption check on a resource this Buckety has
// recorded no verdict for (cl nil: no claim yet; or cl Claimed), and
// records the verdict in the claim before anything is written to the
// resource: a new claim is born in that phase (one write), a Claimed one
// is advanced. It returns the claim, whether this call recorded Creating,
// and false when provisioning stops here (refused, conflict, or an error,
// all in f).
func (r *Reconciler) inspectAndRecord(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, cl *v1.BucketyClaim) (*v1.BucketyClaim, bool, bool) {
	in, err := e.Backend.Inspect(ctx, drivers.Resource{Name: f.resourceName, Parameters: b.Spec.Parameters})
	if err != nil {
		f.Record(err)
		return nil, false, false
	}
	adopting := in.Exists && b.Spec.Adoption.Adopts() && e.Config.AllowsAdoption()
	if in.Exists && in.HasContent && !adopting {
		if cl == nil {
			// The cache may not show yet a claim an earlier pass of this
			// Buckety wrote (and the content may be what its workloads
			// wrote since): ask the API server before refusing.
			mine, other, err := r.Claims.Held(ctx, b, e.Name, f.resourceName, true)
			switch {
			case err != nil:
				f.claimErr = err
				return nil, false, false
			case mine != nil && mine.Spec.Phase != v1.ClaimClaimed:
				return mine, false, true
			case other:
				// Another Buckety's: a conflict, or a stale claim to take
				// over (then released below, as refused).
				if !r.acquire(ctx, b, e, f) {
					return nil, false, false
				}
				mine = f.claim
			}
			cl = mine
		}
		if cl != nil {
			// The claim is released only as read (see claims.Store.Release): a
			// stale Claimed claim, really Creating or Created, conflicts,
			// and the next pass sees what buckety wrote.
			if err := r.Claims.Release(ctx, cl); err != nil {
				f.claimErr = err
				return nil, false, false
			}
		}
		f.adoptionRefused = in.Detail
		f.adoptionHint = adoptionHint(b, e)
		r.event(b, corev1.EventTypeWarning, v1.EventAdoptionRefused, v1.EventActionProvision, in.Detail)
		return nil, false, false
	}
	phase := v1.ClaimCreating
	switch {
	case adopting:
		phase = v1.ClaimAdopting
	case in.Exists:
		phase = v1.ClaimAdopted
	}
	if cl == nil {
		got, created, conflict, err := r.Claims.AcquireAs(ctx, b, e.Name, f.resourceName, phase)
		switch {
		case err != nil:
			f.claimErr = err
			return nil, false, false
		case conflict != nil:
			f.conflictOwner = conflict.Owner
			r.conflictEvent(b, e, f)
			return nil, false, false
		case created:
			testhook.Pause(ctx, testhook.AfterInspect)
			return got, phase == v1.ClaimCreating, true
		case got.Spec.Phase != v1.ClaimClaimed:
			// Recorded by an earlier pass the cache had not shown: that
			// verdict stands.
			return got, false, true
		}
		cl = got
	}
	if err := r.Claims.Advance(ctx, cl, phase); err != nil {
		f.claimErr = err
		return nil, false, false
	}
	testhook.Pause(ctx, testhook.AfterInspect)
	return cl, phase == v1.ClaimCreating, true
}

// adoptionHint tells the tenant of a refused adoption what would let it in.
func adoptionHint(b *v1.Buckety, e *backends.Entry) string {
	switch {
	case b.Spec.Adoption.Adopts():
		return fmt.Sprintf("spec.adoption is %s, but backend %s does not allow adoption (adoption.allow in buckety-controller.yaml): empty it, or choose another spec.name", b.Spec.Adoption, e.Name)
	case e.Config.AllowsAdoption():
		return "buckety does not claim a resource that already holds content unless asked to: set spec.adoption: Adopt to take it over, empty it, or choose another spec.name"
	}
	return "buckety does not claim a resource that already holds content: empty it, or choose another spec.name"
}

// settleAdoption decides whether an adoption the tenant asked for (claim
// phase Adopting) is settled, and records it in the claim (Adopted) before
// anything is written to the resource. It compares the resource with
// spec.parameters through the driver's dry run. With differences and
// spec.adoption other than AdoptAndConverge, nothing is applied: the
// differences are reported (Ready=False, reason AdoptionDrift) and the
// claim stays Adopting until the parameters match or the tenant asks to
// converge. Differences being converged are announced in an event first.
func (r *Reconciler) settleAdoption(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	res, err := e.Backend.Ensure(ctx, drivers.Resource{Name: f.resourceName, Parameters: b.Spec.Parameters, DryRun: true})
	var drift *drivers.DriftError
	if err != nil && !errors.As(err, &drift) {
		f.Record(err)
		return false
	}
	diffs := res.Changes
	if drift != nil {
		diffs = append(diffs, drift.Error())
	}
	if len(diffs) > 0 && b.Spec.Adoption != v1.AdoptionAndConverge {
		f.adoptionDrift = diffs
		f.drift = drift
		if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c == nil || c.Reason != v1.ReasonAdoptionDrift || c.ObservedGeneration != b.Generation {
			r.event(b, corev1.EventTypeWarning, v1.EventAdoptionDrift, v1.EventActionAdopt, fmt.Sprintf("%s on backend %s differs from spec.parameters; nothing applied: %s", f.resourceName, e.Name, strings.Join(diffs, "; ")))
		}
		return false
	}
	if len(diffs) > 0 {
		r.event(b, corev1.EventTypeNormal, v1.EventAdoptionConverging, v1.EventActionAdopt, fmt.Sprintf("spec.adoption is AdoptAndConverge; applying to %s on backend %s: %s", f.resourceName, e.Name, strings.Join(diffs, "; ")))
	}
	if err := r.Claims.Advance(ctx, f.claim, v1.ClaimAdopted); err != nil {
		f.claimErr = err
		return false
	}
	return true
}
