package buckety

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/testhook"
)

// Adoption. buckety takes over a resource it did not create only when both
// keys agree: the maintainer's (the backend's adoption.allow) and the
// tenant's (spec.adoption Adopt, or AdoptAndConverge to write to it).
// Without them, an existing resource no owner record accounts for is
// refused, empty or not: an empty topic may be another system's live one
// whose records expired, an empty bucket one another system is about to
// fill, and a Buckety that named it would hand its tenant credentials on
// what that system writes next. A resource buckety itself left (retained,
// or held for a Buckety this cluster deleted) is refused only when it
// holds content. An adopted resource is written to only once it matches
// spec.parameters (or both keys ask to converge): until then the Buckety
// reports the differences (AdoptionDrift). Both keys are checked again on
// every pass until the adoption settles.

// adoptionKeys reports whether both keys allow taking over a resource
// buckety did not make.
func adoptionKeys(b *v1.Buckety, e *backends.Entry) bool {
	return b.Spec.Adoption.Adopts() && e.Config.AllowsAdoption()
}

// inspectAndRecord runs the adoption check on a resource this Buckety has
// recorded no verdict for (cl nil: no claim yet; or cl Claimed), and
// records the verdict in the claim before anything is written to the
// resource: a new claim is born in that phase (one write), a Claimed one
// is advanced. A missing resource is recorded Created before Ensure
// creates it (the claim's final phase, so the create costs no second claim
// write; a resource someone else creates between the check and the create
// turns it Adopting, see provision), an existing one Adopting
// (settleAdoption decides the rest). It returns the claim, whether this
// call recorded Created, what the check found, and false
// when provisioning stops here (refused, conflict, or an error, all in f).
func (r *Reconciler) inspectAndRecord(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, cl *v1.BucketyClaim) (*v1.BucketyClaim, bool, *drivers.Inspection, bool) {
	// The check looks where this Buckety's parameters say, which must be
	// where the claim says the resource lives (one taken over from a
	// deleted Buckety keeps its location).
	if cl != nil && r.locatedElsewhere(ctx, b, e, f, cl) {
		return nil, false, nil, false
	}
	in, err := e.Backend.Inspect(ctx, backendResource(e, f.resourceName, f.params, nil))
	if err != nil {
		f.Record(err)
		return nil, false, nil, false
	}
	k := r.key(e, f.resourceName)
	// The owner record on the backend, read fresh: another installation's
	// resource is never taken, empty or not; this installation's own, for
	// this Buckety (a cluster rebuilt from git), or one handed over to it,
	// is re-attached whatever it holds.
	reattach := false
	var retainedFrom *v1.ClaimRetained
	if in.Exists {
		v, ok := r.ownerVerdict(ctx, b, e, f)
		if !ok {
			if cl != nil {
				if err := r.letGo(ctx, cl); err != nil {
					f.claimErr = err
				}
			}
			return nil, false, nil, false
		}
		reattach = v == ownerMine || v == ownerHandedToMe
		// A record of this namespace and name held for a Buckety of it
		// this cluster knew, gone with its finalizer removed (verdict:
		// ownerRetained), follows the adoption rules; one retained while
		// its backend was missing from the config is marked so here
		// either way.
		if v == ownerMine || f.recordForName {
			kept, ok := r.keptUnmarked(ctx, b, e, k, cl, f)
			if !ok {
				return nil, false, nil, false
			}
			if kept != nil {
				reattach = false
				retainedFrom = kept
			}
		}
	} else if r.nameHeldElsewhere(ctx, b, e, f) {
		if cl != nil {
			if err := r.letGo(ctx, cl); err != nil {
				f.claimErr = err
			}
		}
		return nil, false, nil, false
	}
	// Made outside buckety, as far as the records tell: no owner record,
	// and not a resource this installation retained.
	unrecorded := f.unrecorded() && retainedFrom == nil
	if in.Exists && (in.HasContent || unrecorded) && !adoptionKeys(b, e) && !reattach {
		if cl == nil {
			// The cache may not show yet a claim an earlier pass of this
			// Buckety wrote (and the content may be what its workloads
			// wrote since): ask the API server before refusing.
			mine, other, err := r.Claims.Held(ctx, b, k, true)
			switch {
			case err != nil:
				f.claimErr = err
				return nil, false, nil, false
			case mine != nil && mine.Spec.Phase != v1.ClaimClaimed:
				return mine, false, nil, true
			case other:
				// Another Buckety's: a conflict, or a stale claim to take
				// over (then released below, if refused).
				if !r.acquire(ctx, b, e, f) {
					return nil, false, nil, false
				}
				mine = f.claim
			}
			cl = mine
		}
		// An empty resource a claim of this cluster vouches for is
		// buckety's, whatever its record says; any other is refused.
		if in.HasContent || !vouches(f, cl) {
			if cl != nil {
				// The claim is released only as read (see claims.Store.Release): a
				// stale Claimed claim, really Creating or Created, conflicts,
				// and the next pass sees what buckety wrote.
				if err := r.letGo(ctx, cl); err != nil {
					f.claimErr = err
					return nil, false, nil, false
				}
			}
			why := ""
			switch {
			case retainedFrom != nil:
				why = fmt.Sprintf("was retained when Buckety %s/%s was deleted (%s), and holds content", retainedFrom.Owner.Namespace, retainedFrom.Owner.Name, retainedFrom.Since.UTC().Format(time.RFC3339))
			case !in.HasContent:
				why = unrecordedWhy(f)
			}
			r.refuse(ctx, b, e, f, in, why)
			return nil, false, nil, false
		}
	}
	phase := v1.ClaimCreated
	switch {
	case in.Exists && !reattach:
		phase = v1.ClaimAdopting
	case reattach && f.recordAdopted:
		// Adopted, not created, by this Buckety before (the record says
		// so): held as adopted again, which retentionPolicy Delete
		// deletes only with the backend's adoption.deleteAdopted.
		phase = v1.ClaimAdopted
	}
	// Ensure creates only what this pass found missing (CreateOnly); a
	// re-attached resource exists and is converged as any of its own.
	creates := phase == v1.ClaimCreated && !in.Exists
	loc := claims.Location(drivers.LocationParameters(e.Driver), f.params)
	if cl == nil {
		got, created, conflict, err := r.Claims.AcquireAs(ctx, b, k, phase, loc, f.budgeted)
		switch {
		case err != nil:
			f.claimErr = err
			return nil, false, nil, false
		case conflict != nil:
			r.conflict(ctx, b, e, k, conflict, f)
			return nil, false, nil, false
		case created && got.Spec.Phase == phase:
			testhook.Pause(ctx, testhook.AfterInspect)
			return got, creates, &in, true
		case got.Spec.Phase != v1.ClaimClaimed:
			// Recorded by an earlier pass the cache had not shown: that
			// verdict stands.
			return got, false, nil, true
		}
		// Claimed: an earlier pass's claim the cache had not shown, or
		// one taken over that records another location than this check
		// looked at (claims.Store.AcquireAs records no verdict then).
		cl = got
	}
	if r.locatedElsewhere(ctx, b, e, f, cl) {
		return nil, false, nil, false
	}
	if cl.Spec.Location == nil {
		cl.Spec.Location = loc
	}
	if err := r.Claims.Advance(ctx, cl, phase); err != nil {
		f.claimErr = err
		return nil, false, nil, false
	}
	testhook.Pause(ctx, testhook.AfterInspect)
	return cl, creates, &in, true
}

// locatedElsewhere reports, with f set, whether claim cl, on which this
// pass has recorded no verdict yet, records its resource at another
// location than this Buckety's parameters select (drivers.Locator: an R2
// bucket's jurisdiction, which picks the endpoint of every call): the
// adoption check would look at, and the create make, a resource of the
// same name elsewhere. Nothing is asked of the backend. A claim taken
// over from a deleted Buckety (it keeps that Buckety's retained record)
// is given back to the record, as a refused adoption's is, so what the
// resource counts stays with the namespace it was retained from; the
// tenant is told which parameter differs, and its value only when the
// resource was retained from a Buckety of its own namespace.
func (r *Reconciler) locatedElsewhere(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, cl *v1.BucketyClaim) bool {
	keys := drivers.LocationParameters(e.Driver)
	changed := claims.LocationKeysChanged(keys, cl, f.params)
	if len(changed) == 0 {
		return false
	}
	from := cl.Spec.Retained
	if from == nil || from.Owner.UID == cl.Spec.Owner.UID {
		f.locationChanged = claims.LocationChanged(keys, cl, f.params)
		return true
	}
	f.locationRetained = true
	if from.Owner.Namespace == b.Namespace {
		f.locationChanged = fmt.Sprintf("%s on backend %s was retained when Buckety %s/%s was deleted: %s", f.resourceName, e.Name, from.Owner.Namespace, from.Owner.Name, claims.LocationChanged(keys, cl, f.params))
	} else {
		params := make([]string, len(changed))
		for i, k := range changed {
			params[i] = "spec.parameters[" + k + "]"
		}
		f.locationChanged = fmt.Sprintf("%s on backend %s was retained from a deleted Buckety, and made with another %s than this Buckety's", f.resourceName, e.Name, strings.Join(params, ", "))
	}
	if err := r.letGo(ctx, cl); err != nil {
		f.claimErr = err
	}
	return true
}

// ownerVerdict reads, fresh, the owner record of an existing resource this
// Buckety has no verdict for, and judges it: false (with f set) when the
// record keeps this Buckety out.
func (r *Reconciler) ownerVerdict(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) (ownerVerdict, bool) {
	ok, err := r.ownerRecords(ctx, e, f)
	if err != nil {
		f.Record(err)
		return ownerNone, false
	}
	if !ok {
		f.recordsUnkept = true
		return ownerNone, true
	}
	rec, err := r.readOwner(ctx, b, e, backendResource(e, f.resourceName, f.params, nil), 0)
	if err != nil {
		f.Record(err)
		return ownerNone, false
	}
	v, why, err := r.verdict(ctx, rec, b, e, f.resourceName)
	if err != nil {
		f.claimErr = err
		return ownerNone, false
	}
	f.recordAdopted = rec != nil && rec.Adopted
	named, _ := r.judge(rec, b, e)
	f.recordForName = named == ownerMine
	f.ownerAbsent = rec == nil
	switch {
	case v == ownerForeign, v == ownerSibling && !adoptionKeys(b, e):
		r.ownedElsewhere(b, e, f, rec, why)
		return v, false
	}
	return v, true
}

// keptUnmarked returns the retained record of the resource this pass
// found, when an earlier Buckety of this name was deleted with it kept
// while its backend was missing from the config: the owner record still
// holds it for this namespace and name, but it was retained, so the
// adoption rules apply, not the re-attachment. The record is marked
// retained now, as that deletion would have. ok is false when this pass
// stops here (the error in f). cl is this Buckety's claim on it, or nil
// (then the claims on it are read fresh: a rare read, only where the
// record would re-attach).
func (r *Reconciler) keptUnmarked(ctx context.Context, b *v1.Buckety, e *backends.Entry, k claims.Key, cl *v1.BucketyClaim, f *facts) (*v1.ClaimRetained, bool) {
	var kept *v1.ClaimRetained
	if cl != nil {
		kept = claims.UnmarkedFor(cl, b)
	} else {
		var err error
		if kept, err = r.Claims.RetainedUnmarked(ctx, b, k); err != nil {
			f.claimErr = err
			return nil, false
		}
	}
	if kept == nil {
		return nil, true
	}
	if err := r.retainOwner(ctx, b, e, backendResource(e, f.resourceName, f.params, nil)); err != nil {
		f.Record(err)
		return nil, false
	}
	return kept, true
}

// nameHeldElsewhere reads, for a resource this pass found missing on a
// backend whose records outlive their resources (drivers.OwnerRegistry:
// kadm's registry topic), the record of its name, and reports true (with
// f set) when that record keeps this Buckety from creating it: another
// installation holds the name, creates the resource again on its next
// pass, and its tenants' credentials are granted on the name. A name that
// installation retained (its Buckety deleted with Retain, the resource
// deleted since), or handed over to this one for this Buckety, is free;
// acceptFrom alone frees nothing, since a receiver lists the giver before
// the giver hands over, while the giver still holds its names. The
// record is read at most the sweep's age old (fresh without a sweep): the
// read of a create is answered from the registry the backend holds in
// memory.
func (r *Reconciler) nameHeldElsewhere(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) bool {
	if !registryKept(e) {
		return false
	}
	keeps, err := r.ownerRecords(ctx, e, f)
	if err != nil {
		f.Record(err)
		return true
	}
	if !keeps {
		return false
	}
	rec, err := r.readOwner(ctx, b, e, backendResource(e, f.resourceName, f.params, nil), r.maxAge(e))
	if err != nil {
		f.Record(err)
		return true
	}
	why := missingNameHeld(rec, b, e, r.Backends.Installation(), r.Backends.FormerInstallations()...)
	if why == "" && rec != nil && rec.State == drivers.OwnerHeld && r.ownName(rec.Installation) && (rec.Namespace != b.Namespace || rec.Name != b.Name) {
		// Held by this installation for another Buckety: the claims
		// decide while that Buckety is in this cluster, or was (its
		// finalizer removed by hand); one this cluster never had (a
		// rebuild that has not restored it yet) keeps its name, whatever
		// this Buckety's adoption keys say.
		absent, known, err := r.siblingAbsent(ctx, rec, b, e, f.resourceName)
		if err != nil {
			f.claimErr = err
			return true
		}
		if absent && !known {
			why = fmt.Sprintf("does not exist now, but the backend's owner registry gives its name to this installation's %s%s", rec.HolderFor(b.Namespace), notRestored)
		}
	}
	if why == "" {
		return false
	}
	r.ownedElsewhere(b, e, f, rec, why)
	return true
}

// missingNameHeld says why rec, the registry's record of a resource that
// does not exist, keeps a Buckety b of installation inst from creating it
// on e; "" when it does not (see nameHeldElsewhere). Records of inst's own
// (its former names included) are left to the claims.
func missingNameHeld(rec *drivers.OwnerRecord, b *v1.Buckety, e *backends.Entry, inst string, former ...string) string {
	switch {
	case rec == nil, rec.Installation == inst, slices.Contains(former, rec.Installation), rec.State == drivers.OwnerRetained:
		return ""
	}
	if v, _ := judgeOwner(rec, b, e, inst, former...); v == ownerHandedToMe {
		return ""
	}
	return fmt.Sprintf("does not exist now, but the backend's owner registry gives its name to another buckety installation: %s, which creates it again on its next pass", rec.StringFor(b.Namespace))
}

// vouches reports whether claim cl shows that buckety made the
// unrecorded resource this pass found: only on a backend that keeps no
// owner records (where buckety's own resource carries a record, its
// absence says more than a claim), and only a claim taken over from one
// on a resource buckety wrote to (claims.Store's takeOver keeps the
// retained record until this Buckety writes to it). A claim that is
// merely held, Claimed or Adopting, proves nothing: one is taken over
// fresh from a stale claim that never wrote to the resource; nor does a
// Created one whose create failed, retained when its Buckety went; nor
// one whose create found the resource there after all (claims.Store's
// Advance drops the record then: the check had found it missing).
func vouches(f *facts, cl *v1.BucketyClaim) bool {
	return f.recordsUnkept && cl != nil && cl.Spec.Retained != nil
}

// unrecordedWhy says why an empty resource made outside buckety is
// refused, for the tenant.
func unrecordedWhy(f *facts) string {
	if f.ownerRecordsUnavailable != "" {
		return "already exists, and buckety cannot tell who made it (the backend keeps no owner records); it is empty, but an empty resource may still be someone's, whose content expired or is about to come"
	}
	return "already exists and no buckety installation records it: it was made outside buckety; it is empty, but an empty resource may still be someone's, whose content expired or is about to come"
}

// refuse reports an existing resource that is not taken over: one holding
// content, or one made outside buckety (unrecordedWhy). The
// tenant reads that it exists and why, and what would let it in;
// the driver's detail (which may quote the first object of a bucket the
// tenant does not own) goes only to the controller's log, and
// buckety_adoptions_refused_total counts it.
func (r *Reconciler) refuse(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, in drivers.Inspection, why string) {
	if why == "" {
		why = "already exists and holds content"
	}
	f.adoptionRefused = fmt.Sprintf("%s on backend %s %s", f.resourceName, e.Name, why)
	f.adoptionHint = adoptionHint(b, e, in.HasContent)
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c != nil && c.Reason == v1.ReasonAdoptionRefused && c.ObservedGeneration == b.Generation {
		return // reported in this episode
	}
	metrics.AdoptionsRefused.WithLabelValues(e.Name).Inc()
	logf.FromContext(ctx).Info("adoption refused: the backend resource exists", "backend", e.Name, "resource", f.resourceName, "content", in.HasContent, "detail", in.Detail, "spec.adoption", string(b.Spec.Adoption), "adoption.allow", e.Config.AllowsAdoption())
	r.event(b, corev1.EventTypeWarning, v1.EventAdoptionRefused, v1.EventActionProvision, f.adoptionRefused)
}

// adoptionHint tells the tenant of a refused adoption what would let it
// in: of a resource holding content (emptying it would), or of an empty
// one made outside buckety (only the adoption keys, or its deletion).
func adoptionHint(b *v1.Buckety, e *backends.Entry, content bool) string {
	switch {
	case b.Spec.Adoption.Adopts() && content:
		return fmt.Sprintf("spec.adoption is %s, but backend %s does not allow adoption (adoption.allow in buckety-controller.yaml): empty it, or choose another spec.name", b.Spec.Adoption, e.Name)
	case b.Spec.Adoption.Adopts():
		return fmt.Sprintf("spec.adoption is %s, but backend %s does not allow adoption (adoption.allow in buckety-controller.yaml): choose another spec.name, or have it deleted on the backend", b.Spec.Adoption, e.Name)
	case e.Config.AllowsAdoption() && content:
		return "buckety does not claim a resource that already holds content unless asked to: set spec.adoption: Adopt to take it over, empty it, or choose another spec.name"
	case e.Config.AllowsAdoption():
		return "buckety does not take over a resource it did not create unless asked to: set spec.adoption: Adopt to take it over, or choose another spec.name"
	case content:
		return "buckety does not claim a resource that already holds content: empty it, or choose another spec.name"
	}
	return "buckety does not take over a resource it did not create: choose another spec.name, or have it deleted on the backend"
}

// settleAdoption decides, on every pass while the claim is Adopting,
// whether the adoption of an existing resource is settled, and records it
// in the claim (Adopted) before anything is written to the resource. in is
// what this pass's adoption check found, or nil to look again. Both keys
// are checked again: a resource with content, or one made outside buckety
// (no owner record, no retained claim), without them (withdrawn meanwhile:
// the backend's adoption.allow removed, spec.adoption set back to Refuse;
// or never given: it appeared between the check and the create) is
// refused and the claim released. The resource is compared
// with spec.parameters through the driver's dry run; with differences,
// nothing is applied unless both keys ask to converge (AdoptAndConverge):
// the differences are reported (Ready=False, reason AdoptionDrift) and the
// claim stays Adopting until the parameters match. Differences being
// converged are announced in an event first.
func (r *Reconciler) settleAdoption(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, in *drivers.Inspection, params map[string]string) bool {
	// This pass's adoption check read the owner record; a later pass
	// reads it again, since another installation may have written one
	// while the adoption waited.
	ownerRead := in != nil
	if in == nil {
		got, err := e.Backend.Inspect(ctx, backendResource(e, f.resourceName, params, nil))
		if err != nil {
			f.Record(err)
			return false
		}
		in = &got
	}
	if in.Exists && !ownerRead {
		if _, ok := r.ownerVerdict(ctx, b, e, f); !ok {
			if err := r.letGo(ctx, f.claim); err != nil {
				f.claimErr = err
			}
			return false
		}
	}
	switch {
	case !in.Exists:
		// Gone before anything was written to it: nothing to adopt. The
		// next pass claims it afresh (and creates it).
		if err := r.Claims.Release(ctx, f.claim); err != nil {
			f.claimErr = err
			return false
		}
		r.wake(ctx, f.claim)
		f.claimErr = errors.New("the existing resource being adopted is gone; claiming it again")
		return false
	case in.HasContent && !adoptionKeys(b, e):
		if err := r.letGo(ctx, f.claim); err != nil {
			f.claimErr = err
			return false
		}
		r.refuse(ctx, b, e, f, *in, "holds content, and the adoption is no longer allowed by both spec.adoption and the backend's adoption.allow")
		return false
	case f.unrecorded() && !adoptionKeys(b, e) && !vouches(f, f.claim):
		// Made outside buckety, and not asked for with both keys: one
		// that appeared between the adoption check and the create (the
		// drivers send a create once, so it is someone else's), one whose
		// keys were withdrawn while it settled, or one an older release
		// began to adopt without them.
		if err := r.letGo(ctx, f.claim); err != nil {
			f.claimErr = err
			return false
		}
		r.refuse(ctx, b, e, f, *in, unrecordedWhy(f))
		return false
	}
	dry := backendResource(e, f.resourceName, params, nil)
	dry.DryRun = true
	res, err := e.Backend.Ensure(ctx, dry)
	var drift *drivers.DriftError
	if err != nil && !errors.As(err, &drift) {
		f.Record(err)
		// A retained record whose topic was replaced out of band: not
		// the resource the record was written for, refused until
		// someone acts, on the slow backoff.
		r.replacedByDriver(b, f, err)
		return false
	}
	diffs := res.Changes
	if drift != nil {
		diffs = append(diffs, drift.Error())
	}
	converge := adoptionKeys(b, e) && b.Spec.Adoption == v1.AdoptionAndConverge
	if len(diffs) > 0 && !converge {
		f.adoptionDrift = diffs
		f.adoptionCanConverge = e.Config.AllowsAdoption()
		f.drift = drift
		if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c == nil || c.Reason != v1.ReasonAdoptionDrift || c.ObservedGeneration != b.Generation {
			r.event(b, corev1.EventTypeWarning, v1.EventAdoptionDrift, v1.EventActionAdopt, fmt.Sprintf("%s on backend %s differs from spec.parameters; nothing applied: %s", f.resourceName, e.Name, strings.Join(diffs, "; ")))
		}
		return false
	}
	if f.ownerAbsent && !r.settleUnrecorded(e, f) {
		return false
	}
	if len(diffs) > 0 {
		r.event(b, corev1.EventTypeNormal, v1.EventAdoptionConverging, v1.EventActionAdopt, fmt.Sprintf("spec.adoption is AdoptAndConverge; applying to %s on backend %s: %s", f.resourceName, e.Name, strings.Join(diffs, "; ")))
	}
	if err := r.Claims.Advance(ctx, f.claim, v1.ClaimAdopted); err != nil {
		f.claimErr = err
		return false
	}
	r.unrecorded.Delete(memoKey(e, f.resourceName))
	return true
}

// defaultOwnerSettle is Reconciler.OwnerSettle's default.
const defaultOwnerSettle = 5 * time.Second

// ownerSettle is OwnerSettle, or its default.
func (r *Reconciler) ownerSettle() time.Duration {
	if r.OwnerSettle == 0 {
		return defaultOwnerSettle
	}
	return r.OwnerSettle
}

// settleUnrecorded reports whether an existing resource this pass found
// without an owner record (read fresh) has been found so for
// Reconciler.OwnerSettle, and may be adopted; false, with f set to say so
// and when to look again, while it has not. Another installation writes
// its record right after its create (keepOwner): a resource found in
// between, empty and unrecorded, looks like anyone's to adopt, and both
// installations would hold it, with credentials granted on it, until the
// adopter read the creator's record. The wait is kept in this process
// only: a restart, or a shard moving to another replica, starts it
// again, which only delays the adoption. A wait begun longer ago than
// the settle and a minute, whose passes were held up on the way (an
// adoption drift the tenant resolved), starts again.
func (r *Reconciler) settleUnrecorded(e *backends.Entry, f *facts) bool {
	settle := r.ownerSettle()
	now := time.Now()
	k := memoKey(e, f.resourceName)
	v, loaded := r.unrecorded.LoadOrStore(k, now)
	first := v.(time.Time)
	if !loaded {
		r.pruneUnrecorded(now, settle)
	}
	if loaded && now.Sub(first) > settle+time.Minute {
		r.unrecorded.Store(k, now)
		first = now
	}
	left := settle - now.Sub(first)
	if left <= 0 {
		return true
	}
	f.settleIn = left
	f.ownerSettling = fmt.Sprintf("%s on backend %s exists and carries no owner record; buckety adopts it once it has stayed so for %s, in case another installation created it a moment ago and is about to record it", f.resourceName, e.Name, settle)
	return false
}

// pruneUnrecorded forgets the waits begun longer ago than the settle and
// a minute: those of Bucketies deleted, renamed or moved to another
// backend while they waited, which no pass ends (a wait still wanted
// starts again, as settleUnrecorded does with one that old). It runs when
// a wait begins, at most once a minute (a bulk adoption of thousands
// begins thousands of waits at once), so the map holds at most the waits
// of the last few minutes.
func (r *Reconciler) pruneUnrecorded(now time.Time, settle time.Duration) {
	last := r.unrecordedPruned.Load()
	if now.UnixNano()-last < int64(time.Minute) || !r.unrecordedPruned.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	r.unrecorded.Range(func(k, v any) bool {
		if now.Sub(v.(time.Time)) > settle+time.Minute {
			r.unrecorded.CompareAndDelete(k, v)
		}
		return true
	})
}
