package buckety

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
)

// Owner records on the backend (drivers.OwnerRecorder). Claims decide
// ownership inside one cluster; the record on the backend decides it
// between installations, and for an installation rebuilt from git whose
// claims were lost with its etcd:
//
//   - an existing resource whose record names another installation is never
//     adopted or written, empty or not, whatever spec.adoption says
//     (OwnedElsewhere), unless that installation handed it over to this one
//     and this backend accepts handovers from it (ownership.acceptFrom), for
//     a Buckety of the same namespace and name;
//   - one whose record names this installation, held for a Buckety of the
//     same namespace and name, is re-attached without any adoption key:
//     claimed Created, converged, deleted by retentionPolicy Delete;
//   - a retained one (its Buckety was deleted with Retain), or one with no
//     record, follows the adoption rules;
//   - every resource this installation writes to gets its record, Held,
//     after the create, and on its next pass for one created by an earlier
//     release; a Buckety deleted with Retain marks it Retained, one deleted
//     with Delete removes it with the resource;
//   - a backend whose ownership.handOverTo names another installation marks
//     each of its records handed over, and writes nothing more to them;
//   - a missing resource whose name another installation holds in a
//     registry that outlives resources (kadm) is not created
//     (nameHeldElsewhere);
//   - a Buckety whose resource now carries another installation's record
//     (deleted out of band and created again there) reports
//     OwnedElsewhere, and its accesses' credentials are revoked;
//   - a Buckety whose claim records that its record was on the resource
//     (spec.ownerRecorded), where records are kept with the resources,
//     and whose resource now stands with no record at all (deleted out
//     of band and created again by someone outside buckety) writes
//     nothing to it, grants nothing on it, and neither drains nor
//     deletes it (recordGone).
//
// Records are read fresh (MaxAge 0) wherever a resource would be taken
// over or deleted. Otherwise a registry held in memory (kadm) is read on
// every pass, at most a sweep interval old, and a record kept with the
// resource (S3 tags) is remembered per process (ownerMemo) for the
// Buckety's generation and at most half the re-check interval: a
// steady-state pass costs no request, and an edit, a periodic pass or a
// pass about to write to the resource (a drift repair: confirmOwner)
// reads the record again.

// ownerVerdict is what a record means for a Buckety of this installation.
type ownerVerdict int

const (
	// ownerNone: no record; the adoption rules apply.
	ownerNone ownerVerdict = iota
	// ownerMine: held by this installation for this Buckety (namespace and
	// name): re-attached.
	ownerMine
	// ownerHandedToMe: handed over to this installation by one this backend
	// accepts, for a Buckety of this namespace and name: taken over.
	ownerHandedToMe
	// ownerRetained: this installation retained it: the adoption rules
	// apply.
	ownerRetained
	// ownerSibling: held by this installation for another Buckety: refused
	// unless both adoption keys allow taking it over.
	ownerSibling
	// ownerForeign: another installation's, or handed over by this one:
	// never adopted or written.
	ownerForeign
)

// judgeOwner reads rec for Buckety b on backend e of installation inst.
// why explains a refusal, in what the tenant may read.
func judgeOwner(rec *drivers.OwnerRecord, b *v1.Buckety, e *backends.Entry, inst string, former ...string) (v ownerVerdict, why string) {
	if rec == nil {
		return ownerNone, ""
	}
	// own: this installation's name, or a name it had before
	// (formerInstallations).
	own := func(name string) bool { return name == inst || slices.Contains(former, name) }
	same := rec.Namespace == b.Namespace && rec.Name == b.Name
	if !own(rec.Installation) {
		switch {
		case rec.State == drivers.OwnerHandedOver && own(rec.To) && !e.Config.AcceptsHandoverFrom(rec.Installation):
			return ownerForeign, fmt.Sprintf("is handed over to this installation (%s) by installation %s, which backend %s does not accept: its maintainer lists %s in ownership.acceptFrom to take it over", inst, rec.Installation, e.Name, rec.Installation)
		case rec.State == drivers.OwnerHandedOver && own(rec.To) && !same:
			return ownerForeign, fmt.Sprintf("is handed over to this installation by installation %s for %s; only a Buckety of that namespace and name takes it over", rec.Installation, rec.HolderFor(b.Namespace))
		case rec.State == drivers.OwnerHandedOver && own(rec.To):
			return ownerHandedToMe, ""
		}
		return ownerForeign, fmt.Sprintf("is owned by another buckety installation: %s", rec.StringFor(b.Namespace))
	}
	switch rec.State {
	case drivers.OwnerRetained:
		return ownerRetained, ""
	case drivers.OwnerHandedOver:
		if e.Config.HandOverTo() != "" || !same {
			return ownerForeign, fmt.Sprintf("was handed over by this installation to installation %s", rec.To)
		}
		// The handover was called off (handOverTo removed) before the
		// receiver took it: this installation takes it back.
	}
	if !same {
		return ownerSibling, fmt.Sprintf("is held by this installation for %s", rec.HolderFor(b.Namespace))
	}
	return ownerMine, ""
}

// judge is judgeOwner for this installation, its former names included.
func (r *Reconciler) judge(rec *drivers.OwnerRecord, b *v1.Buckety, e *backends.Entry) (ownerVerdict, string) {
	return judgeOwner(rec, b, e, r.Backends.Installation(), r.Backends.FormerInstallations()...)
}

// verdict is judge for the record of resource, with a record held for
// another Buckety of this installation that no longer exists in this
// cluster taken for no record, where a claim here shows this cluster
// knew that Buckety (claims.Store.Knew): it was deleted with its
// finalizer removed by hand, so its claim was taken over (the claims
// decide inside one cluster), and the adoption rules apply as they would
// without a record. A Buckety that stands, or is being deleted, keeps
// it; so does one this cluster never knew, adoption keys or not
// (ownerForeign): a cluster rebuilt from Git that has not restored it yet
// would otherwise hand its resource, and its data, to whichever Buckety
// of another namespace names it first.
//
// A record held for this namespace and name but another Buckety (its
// UID), one this cluster knew (a claim here held the resource for it, or
// keeps it as the owner its retained record names: a takeover keeps the
// gone owner there until the taker writes to the resource), is taken for
// a retained record: that Buckety was deleted with its finalizer removed
// by hand (a namespace deleted so, perhaps given to another team since),
// and its resource, and its data, go to the Buckety now of its name only
// under the adoption rules, as a resource its Buckety retained would. A
// record whose Buckety this cluster never knew (no claim: a cluster
// rebuilt from Git) is this Buckety's, re-attached (ownerMine).
func (r *Reconciler) verdict(ctx context.Context, rec *drivers.OwnerRecord, b *v1.Buckety, e *backends.Entry, resource string) (ownerVerdict, string, error) {
	v, why := r.judge(rec, b, e)
	if v == ownerMine && rec.UID != "" && rec.UID != string(b.UID) {
		// self "": this Buckety's own claim proves nothing of the
		// other's (it is what a rebuilt cluster's re-attachment makes).
		known, err := r.Claims.Knew(ctx, r.key(e, resource), rec.UID, "")
		switch {
		case err != nil:
			return v, why, err
		case known:
			return ownerRetained, "", nil
		}
		return v, why, nil
	}
	if v != ownerSibling {
		return v, why, nil
	}
	absent, known, err := r.siblingAbsent(ctx, rec, b, e, resource)
	switch {
	case err != nil:
		return v, why, err
	case absent && known:
		return ownerNone, "", nil
	case absent:
		// Kept for that Buckety whatever this one's adoption keys say:
		// the keys take a sibling's resource over where the claims decide
		// between two Bucketies this cluster has; here the other one is
		// not restored yet, and no claim stands for it.
		return ownerForeign, why + notRestored, nil
	}
	return v, why, nil
}

// notRestored is what a tenant reads of a record held for a Buckety this
// cluster never had.
const notRestored = ", which this cluster does not have (not restored from Git yet, or deleted with its finalizer removed and its claim deleted since): it is kept for that Buckety, which takes it back when it is applied; a cluster maintainer who knows it is gone for good removes its owner record from the backend to free the name"

// siblingAbsent reports, for rec held by this installation for another
// Buckety than b, whether that Buckety is missing from this cluster (read
// fresh), and if so whether a claim on resource shows this cluster knew
// it, or decided the resource for b since (claims.Store.Knew).
func (r *Reconciler) siblingAbsent(ctx context.Context, rec *drivers.OwnerRecord, b *v1.Buckety, e *backends.Entry, resource string) (absent, known bool, err error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	err = reader.Get(ctx, types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name}, &v1.Buckety{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, false, err
	default:
		return false, false, nil
	}
	known, err = r.Claims.Knew(ctx, r.key(e, resource), rec.UID, string(b.UID))
	return true, known, err
}

// ownName reports whether name is this installation's, now or before.
func (r *Reconciler) ownName(name string) bool {
	return name == r.Backends.Installation() || slices.Contains(r.Backends.FormerInstallations(), name)
}

// ownerMemo remembers, per backend resource, the record this process last
// read or wrote, and when, so a steady-state pass costs no request. What
// it remembers is trusted for a while only (get's maxAge): a resource
// deleted out of band and created again by another installation carries
// that installation's record (a bucket's tags), and this installation
// must see it and stop writing to it, its tenants' credentials revoked.
type ownerMemo struct {
	m sync.Map // backend/resource -> memoEntry
	// now is the clock; time.Now when nil.
	now func() time.Time
}

type memoEntry struct {
	rec drivers.OwnerRecord
	at  time.Time
	// gen is the generation of the Buckety whose pass read or wrote it.
	gen int64
	// epoch is the backend's registry epoch then (registryEpoch): a
	// registry deleted and created again since holds none of the records
	// remembered.
	epoch uint64
}

// registryEpoch is e's drivers.RegistryEpochs epoch, 0 for a backend
// without one.
func registryEpoch(e *backends.Entry) uint64 {
	if re, ok := e.Owners.(drivers.RegistryEpochs); ok {
		return re.RegistryEpoch()
	}
	return 0
}

func memoKey(e *backends.Entry, name string) string { return e.Name + "/" + name }

func (m *ownerMemo) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// get returns the record remembered for the resource, if a pass of
// generation gen read or wrote it less than maxAge ago: a pass for a spec
// not yet applied writes to the resource, and reads the record first.
func (m *ownerMemo) get(e *backends.Entry, name string, maxAge time.Duration, gen int64) (drivers.OwnerRecord, bool) {
	v, ok := m.m.Load(memoKey(e, name))
	if !ok {
		return drivers.OwnerRecord{}, false
	}
	me := v.(memoEntry)
	if me.gen != gen || m.clock().Sub(me.at) >= maxAge || me.epoch != registryEpoch(e) {
		return drivers.OwnerRecord{}, false
	}
	return me.rec, true
}

func (m *ownerMemo) put(e *backends.Entry, name string, rec *drivers.OwnerRecord, gen int64) {
	if rec == nil {
		m.m.Delete(memoKey(e, name))
		return
	}
	m.m.Store(memoKey(e, name), memoEntry{rec: *rec, at: m.clock(), gen: gen, epoch: registryEpoch(e)})
}

// memoAge is how long a remembered record is trusted: half the per-object
// re-check, so every periodic pass reads the record again (one request on
// S3, the registry in memory on kadm) and passes between them do not.
func (r *Reconciler) memoAge() time.Duration {
	return r.Recheck / 2
}

// ownerRecords reports whether e keeps owner records, and records in f why
// not where its driver could but the service cannot.
func (r *Reconciler) ownerRecords(ctx context.Context, e *backends.Entry, f *facts) (bool, error) {
	if e.Owners == nil {
		return false, nil
	}
	ok, why, err := e.Owners.OwnerRecords(ctx)
	if err != nil {
		return false, err
	}
	if !ok {
		f.ownerRecordsUnavailable = fmt.Sprintf("backend %s keeps no owner record with its resources (%s): ownership is kept only in this cluster, so another installation on the same service is not kept out", e.Name, why)
	}
	return ok, nil
}

// readOwner reads the record of the resource, fresh when maxAge is 0, in
// a pass of b.
func (r *Reconciler) readOwner(ctx context.Context, b *v1.Buckety, e *backends.Entry, res drivers.Resource, maxAge time.Duration) (*drivers.OwnerRecord, error) {
	res.MaxAge = maxAge
	res.DryRun, res.CreateOnly, res.BeforeWrite, res.JustCreated = false, false, nil, false
	rec, err := e.Owners.ReadOwner(ctx, res)
	if err != nil {
		return nil, err
	}
	r.owners.put(e, res.Name, rec, b.Generation)
	return rec, nil
}

// heldRecord is the record this installation keeps for b, whose claim is
// cl: adopted when the claim says buckety adopted the resource.
func (r *Reconciler) heldRecord(b *v1.Buckety, cl *v1.BucketyClaim) *drivers.OwnerRecord {
	return &drivers.OwnerRecord{Installation: r.Backends.Installation(), Namespace: b.Namespace, Name: b.Name, UID: string(b.UID), State: drivers.OwnerHeld,
		Adopted: cl != nil && cl.Spec.Phase == v1.ClaimAdopted}
}

// checkOwner is the owner check of an existing resource this Buckety
// already claims, before anything is written to it: false (with f set)
// when the record says it is not this Buckety's to write. It reads the
// record and remembers it for memoAge, for the Buckety's generation (a
// pass for an edited spec reads it again: it writes to the resource); on
// a registry kept in memory (registryKept) every pass reads it.
func (r *Reconciler) checkOwner(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, res drivers.Resource) bool {
	ok, err := r.ownerRecords(ctx, e, f)
	if err != nil {
		f.Record(err)
		return false
	}
	if !ok {
		return true
	}
	if rec, known := r.owners.get(e, res.Name, r.memoAge(), b.Generation); known && rec.Same(r.heldRecord(b, f.claim)) && !registryKept(e) {
		// Trusted for a pass that writes nothing; one that does reads
		// it first (confirmOwner).
		f.ownerFromMemo = true
		return true
	}
	return r.judgeOwnerRecord(ctx, b, e, f, res, r.maxAge(e))
}

// confirmOwner is drivers.Resource.BeforeWrite's owner check, for a pass
// whose check trusted the record this process remembers (checkOwner):
// before the first write the record is read fresh. A bucket deleted out
// of band and created again by another installation, with settings of
// its own, looks drifted to this installation; repairing it on the word
// of a record read before the delete would write this installation's
// settings to the other's bucket and keep its credentials granted there.
// One request, only on a pass that writes. errNotOwned when the record
// keeps this Buckety out (reported in f).
func (r *Reconciler) confirmOwner(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, res drivers.Resource) error {
	if !f.ownerFromMemo {
		return nil
	}
	f.ownerFromMemo = false
	if !r.judgeOwnerRecord(ctx, b, e, f, res, 0) {
		return errNotOwned
	}
	return nil
}

// errNotOwned ends an Ensure whose owner check (confirmOwner) found the
// resource not this Buckety's to write; f says why.
var errNotOwned = errors.New("the owner record keeps this Buckety out of the resource")

// judgeOwnerRecord reads the record of the resource (at most maxAge old)
// and judges it for b: false, with f set, when it keeps b out.
func (r *Reconciler) judgeOwnerRecord(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, res drivers.Resource, maxAge time.Duration) bool {
	rec, err := r.readOwner(ctx, b, e, res, maxAge)
	if err != nil {
		f.Record(err)
		return false
	}
	v, why, err := r.verdict(ctx, rec, b, e, res.Name)
	if err != nil {
		f.claimErr = err
		return false
	}
	switch v {
	case ownerForeign:
		r.ownedElsewhere(b, e, f, rec, why)
		return false
	case ownerSibling:
		if !adoptionKeys(b, e) {
			r.ownedElsewhere(b, e, f, rec, why)
			return false
		}
	case ownerMine:
		// The record read there holds the resource for this Buckety: a
		// claim made before claims recorded their service records this
		// one (servicechange.go).
		if !r.stampService(ctx, e, f) {
			return false
		}
	}
	return r.recordKept(ctx, b, e, f, res, rec)
}

// keptWithResource reports whether e keeps its owner records with the
// resources (a bucket's tags), where a record goes with its resource: not
// in a registry apart from them (registryKept), which keeps a deleted
// resource's record and tells the resource created again by its own
// means (kadm's topic IDs).
func keptWithResource(e *backends.Entry) bool {
	return e.Owners != nil && !registryKept(e)
}

// recordGone says why resource res, whose claim cl records that its
// owner's record was on it (spec.ownerRecorded), is not the resource that
// record was on, "" when nothing says so: the backend keeps its records
// with the resources (keptWithResource), the record read fresh is rec,
// none at all, and the resource exists. A bucket's tags go with it: the
// bucket this Buckety held was deleted out of band, and someone outside
// buckety (an application that creates its bucket on start, Terraform)
// created one of the same name since, perhaps with data of its own.
// Trusted as this Buckety's, it would get this Buckety's record and
// grants, a drain would empty it and retentionPolicy Delete delete it.
// One request (an Inspect), only for a flagged claim whose record is
// missing; a resource that is gone is created again as before, and gets
// its record.
func (r *Reconciler) recordGone(ctx context.Context, b *v1.Buckety, e *backends.Entry, cl *v1.BucketyClaim, res drivers.Resource, rec *drivers.OwnerRecord) (string, error) {
	if rec != nil || cl == nil || !cl.Spec.OwnerRecorded || !keptWithResource(e) {
		return "", nil
	}
	var scratch facts
	if ok, err := r.ownerRecords(ctx, e, &scratch); err != nil || !ok {
		// A service that keeps no records holds none on any resource.
		return "", err
	}
	res.DryRun, res.CreateOnly, res.BeforeWrite, res.JustCreated = false, false, nil, false
	in, err := e.Backend.Inspect(ctx, res)
	if err != nil {
		return "", err
	}
	if !in.Exists {
		// Gone: the pass creates it again. The flag is cleared once this
		// Buckety's create made the new bucket (keepOwner), not here: a
		// HEAD answered 404 by a lagging node would clear it over a
		// stranger's bucket that is there.
		return "", nil
	}
	return fmt.Sprintf("%s on backend %s carries no owner record, and claim %s records that this Buckety's record was written on it (spec.ownerRecorded): it is not the resource this Buckety held (that one was deleted out of band, and someone outside buckety created one of the same name since), or it was restored without its owner record", res.Name, e.Name, cl.Name), nil
}

// goneHint is what an operator does about a resource recordGone
// refuses, for claim name.
func goneHint(name string) string {
	return fmt.Sprintf("if it is this Buckety's (restored from a backup without its tags), clear the claim's flag to have buckety take it as it is: kubectl patch bucketyclaim %s --type merge -p '{\"spec\":{\"ownerRecorded\":null}}'; otherwise delete or rename that resource on the backend, and buckety creates this Buckety's again", name)
}

// recordKept is the check of recordGone in a provisioning pass: false,
// with the refusal in f, when the resource is not the one this Buckety's
// record was on. A refusal lasts until someone acts (f.refused: the slow
// backoff), and is reported as a backend's refusal is (kadm's topic
// created again under the name: drivers.RefusedError).
func (r *Reconciler) recordKept(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, res drivers.Resource, rec *drivers.OwnerRecord) bool {
	why, err := r.recordGone(ctx, b, e, f.claim, res, rec)
	switch {
	case err != nil:
		f.Record(err)
		return false
	case why == "":
		return true
	}
	r.replaced(b, f, why+"; buckety does not write its record or settings to it, grant on it, drain or delete it, and revokes the credentials its accesses hold: "+goneHint(f.claim.Name))
	return false
}

// replaced notes in f that the resource under the Buckety's name is not
// the one it held, saying why: reported as its own reason
// (ResourceReplaced), on which the accesses revoke what they hold, with a
// Warning event when Ready did not say so yet, and retried on the slow
// backoff.
func (r *Reconciler) replaced(b *v1.Buckety, f *facts, why string) {
	f.recordGone = why
	f.refused = true
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c == nil || c.Reason != v1.ReasonResourceReplaced || c.ObservedGeneration != b.Generation {
		r.event(b, corev1.EventTypeWarning, v1.ReasonResourceReplaced, v1.EventActionProvision, why)
	}
}

// replacedByDriver notes err in f, as replaced, when the driver refused
// the resource as not the one its owner record was written for
// (drivers.Replaced: kadm's topic created again under the name, told by
// its ID).
func (r *Reconciler) replacedByDriver(b *v1.Buckety, f *facts, err error) {
	if drivers.IsReplaced(err) {
		r.replaced(b, f, err.Error())
	}
}

// noteRecorded records on this pass's claim (spec.ownerRecorded) that
// the owner record on the resource is this Buckety's, written or read
// back, where records are kept with the resources and this backend's
// service keeps them: from then on a resource of the name found with no
// record is not taken for this Buckety's (recordGone). Claims of older
// releases get it at their first pass that reads their record. False,
// with f.claimErr, when the claim could not be written.
func (r *Reconciler) noteRecorded(ctx context.Context, e *backends.Entry, f *facts) bool {
	cl := f.claim
	if cl == nil || cl.Spec.OwnerRecorded || !keptWithResource(e) || (cl.Spec.Phase != v1.ClaimCreated && cl.Spec.Phase != v1.ClaimAdopted) {
		return true
	}
	var scratch facts
	if ok, err := r.ownerRecords(ctx, e, &scratch); err != nil || !ok {
		// A service that keeps no records wrote none; one that could
		// not be asked is asked on the next pass.
		return true
	}
	if err := r.Claims.RecordOwner(ctx, cl); err != nil {
		f.claimErr = err
		return false
	}
	return true
}

// registryKept reports whether e keeps its records in a registry apart
// from the resources, which its backend holds in memory (kadm): a read at
// most a sweep interval old costs no request there (a catch-up at most
// once an interval, shared), so every pass reads it rather than trust
// what this process remembers.
func registryKept(e *backends.Entry) bool {
	reg, ok := e.Owners.(drivers.OwnerRegistry)
	return ok && reg.OwnerRecordsOutliveResources()
}

// keepOwner writes the Held record of a resource this Buckety owns when the
// backend does not hold it yet (a create, a re-attach, an adoption, a
// resource created by an earlier release), after Ensure succeeded. Unless
// this very pass created the resource, the record is read fresh first: an
// installation that adopted an empty resource must not write over the
// record its creator wrote a moment after the create. So is it after a
// create that came late (a slow backend, a stalled process: half the
// settle or more since the create was asked for): another installation
// may have found the resource unrecorded for its settle, adopted it and
// recorded it (settleUnrecorded), and the first recorded keeps it. And
// so is it after a create the service does not prove new
// (EnsureResult.CreateUnproven: AWS S3 in us-east-1 answers a re-create
// under the same keys 200): another installation with those keys may have
// created the resource and recorded it between this pass's check and its
// create.
func (r *Reconciler) keepOwner(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, res drivers.Resource, created, late bool) bool {
	if e.Owners == nil || f.ownerRecordsUnavailable != "" {
		return true
	}
	want := r.heldRecord(b, f.claim)
	if rec, known := r.owners.get(e, res.Name, r.memoAge(), b.Generation); known && rec.Same(want) && !created {
		// A resource this pass created again (deleted out of band) has
		// lost a record kept with it (a bucket's tags), whatever this
		// process remembers: it is written again below.
		return r.noteRecorded(ctx, e, f)
	}
	if !created || late {
		rec, err := r.readOwner(ctx, b, e, res, 0)
		if err != nil {
			f.Record(err)
			return false
		}
		v, why, err := r.verdict(ctx, rec, b, e, res.Name)
		switch {
		case err != nil:
			f.claimErr = err
			return false
		case rec.Same(want):
			return r.noteRecorded(ctx, e, f)
		case v == ownerForeign, v == ownerSibling && !adoptionKeys(b, e):
			r.ownedElsewhere(b, e, f, rec, why)
			return false
		}
		// A resource this pass created holds no record yet, whoever's
		// record its claim says was on the one before.
		if !created && !r.recordKept(ctx, b, e, f, res, rec) {
			return false
		}
	}
	if created && f.claim != nil && f.claim.Spec.OwnerRecorded {
		// This pass's create made the bucket (the one the flag spoke of
		// was deleted out of band): until its record is written, the
		// flag must not stand over it, or a record write lost below
		// would have the next pass refuse the Buckety's own bucket. Set
		// again once the record is written (noteRecorded). A crash
		// between the create and this write leaves it standing: the
		// refusal then names the way out.
		if err := r.Claims.ForgetOwnerRecorded(ctx, f.claim); err != nil {
			f.claimErr = err
			return false
		}
	}
	res.DryRun, res.CreateOnly, res.BeforeWrite, res.MaxAge = false, false, nil, 0
	// A resource this pass created holds no one's record or tags: the
	// driver may skip its read (drivers.Resource.JustCreated).
	res.JustCreated = created && !late
	if f.claim != nil && f.claim.Spec.ServiceID == "" {
		// A record this controller writes proves nothing of the
		// service later (servicechange.go, stampService): the claim
		// says so before the write, where a service reports an
		// identity (a claim made now records it, so this is an older
		// claim's first record there).
		if id, err := drivers.ServiceIDOf(ctx, e.Backend); err == nil && id != "" {
			if err := r.Claims.MarkServiceUnproven(ctx, f.claim); err != nil {
				f.claimErr = err
				return false
			}
		}
	}
	if err := e.Owners.WriteOwner(ctx, res, want); err != nil {
		f.Record(fmt.Errorf("write the owner record of %s: %w", res.Name, err))
		return false
	}
	r.owners.put(e, res.Name, want, b.Generation)
	return r.noteRecorded(ctx, e, f)
}

// ownedElsewhere reports a resource whose record rec keeps this Buckety
// out. A record that names another installation for this very Buckety
// (its UID, which only this cluster's Buckety has) was written by this
// installation under another name: the installation was renamed without
// formerInstallations, or its name is mistyped. Nothing is written to the
// resource either way, but that is reported as InstallationMismatch,
// naming the fix, and the accesses keep their credentials (an
// OwnedElsewhere resource revokes them: it may be another's data).
func (r *Reconciler) ownedElsewhere(b *v1.Buckety, e *backends.Entry, f *facts, rec *drivers.OwnerRecord, why string) {
	reason := v1.ReasonOwnedElsewhere
	if f.misnamed = misnamed(rec, b) && !r.ownName(rec.Installation); f.misnamed {
		reason = v1.ReasonInstallationMismatch
		f.ownedElsewhere = fmt.Sprintf("%s on backend %s is recorded as this Buckety's (UID %s) by installation %s, and this installation is named %s: list %s in formerInstallations in buckety-controller.yaml (or set installation back to it); nothing is written to it until then", f.resourceName, e.Name, b.UID, rec.Installation, r.Backends.Installation(), rec.Installation)
	} else {
		f.ownedElsewhere = fmt.Sprintf("%s on backend %s %s; buckety never adopts or writes it, whatever spec.adoption says: choose another spec.name", f.resourceName, e.Name, why)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c != nil && c.Reason == reason && c.ObservedGeneration == b.Generation && c.Message == f.ownedElsewhere {
		return // reported in this episode: each retry would repeat the event
	}
	r.event(b, corev1.EventTypeWarning, reason, v1.EventActionProvision, f.ownedElsewhere)
}

// misnamed reports whether rec, not handed over, names Buckety b by its
// UID.
func misnamed(rec *drivers.OwnerRecord, b *v1.Buckety) bool {
	return rec != nil && rec.UID != "" && rec.UID == string(b.UID) && rec.State != drivers.OwnerHandedOver
}

// handOver marks the record of a resource this installation owns handed
// over to the installation the backend names (ownership.handOverTo), and
// writes nothing more to the resource. It reports the handover in f.
func (r *Reconciler) handOver(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts, res drivers.Resource) {
	to := e.Config.HandOverTo()
	ok, err := r.ownerRecords(ctx, e, f)
	if err != nil {
		f.Record(err)
		return
	}
	if !ok {
		f.handedOver = fmt.Sprintf("backend %s hands its resources over to installation %s (ownership.handOverTo), but keeps no owner record; nothing is written to %s", e.Name, to, f.resourceName)
		return
	}
	rec, err := r.readOwner(ctx, b, e, res, 0)
	if err != nil {
		f.Record(err)
		return
	}
	switch {
	case rec != nil && rec.Installation == to:
		f.handedOver = fmt.Sprintf("%s on backend %s was handed over to installation %s, which holds it now", f.resourceName, e.Name, to)
		return
	case rec != nil && !r.ownName(rec.Installation):
		_, why := r.judge(rec, b, e)
		r.ownedElsewhere(b, e, f, rec, why)
		return
	case rec == nil:
		// No record: one made before records were kept, or none left
		// because the receiver took the resource over and deleted it
		// (its record went with it). A mark for a resource that is gone
		// would hold its name for the receiver for good (a registry
		// outlives its topics), so only one that exists is marked.
		in, err := e.Backend.Inspect(ctx, res)
		if err != nil {
			f.Record(err)
			return
		}
		if !in.Exists {
			f.handedOver = fmt.Sprintf("%s on backend %s is handed over to installation %s (ownership.handOverTo) and does not exist there now; nothing is written to it from this installation", f.resourceName, e.Name, to)
			return
		}
		// Nor is one someone else made under the name since the one
		// this Buckety's record was on was deleted.
		if !r.recordKept(ctx, b, e, f, res, rec) {
			return
		}
	}
	want := r.heldRecord(b, f.claim)
	want.State, want.To = drivers.OwnerHandedOver, to
	if !rec.Same(want) {
		if err := e.Owners.WriteOwner(ctx, res, want); err != nil {
			f.Record(fmt.Errorf("mark %s handed over: %w", res.Name, err))
			return
		}
		r.owners.put(e, res.Name, want, b.Generation)
		r.event(b, corev1.EventTypeNormal, v1.ReasonHandedOver, v1.EventActionProvision, fmt.Sprintf("marked %s on backend %s handed over to installation %s (ownership.handOverTo); nothing more is written to it from this installation", f.resourceName, e.Name, to))
	}
	f.handedOver = fmt.Sprintf("%s on backend %s is handed over to installation %s (ownership.handOverTo), waiting for it to take it over; nothing more is written to it from this installation", f.resourceName, e.Name, to)
}

// deletableByRecord reads the record, fresh, before the resource is
// deleted or drained: why is non-empty when it is not this
// installation's to delete; gone is true when that is because its claim
// cl records this Buckety's record on it and it has none (recordGone).
func (r *Reconciler) deletableByRecord(ctx context.Context, b *v1.Buckety, e *backends.Entry, cl *v1.BucketyClaim, res drivers.Resource) (why string, gone bool, err error) {
	var f facts
	ok, err := r.ownerRecords(ctx, e, &f)
	if err != nil || !ok {
		return "", false, err
	}
	rec, err := r.readOwner(ctx, b, e, res, 0)
	if err != nil {
		return "", false, err
	}
	v, msg, err := r.verdict(ctx, rec, b, e, res.Name)
	if err != nil {
		return "", false, err
	}
	switch v {
	case ownerForeign, ownerSibling:
		return "its owner record on the backend says it " + msg, false, nil
	}
	why, err = r.recordGone(ctx, b, e, cl, res, rec)
	return why, why != "", err
}

// dropOwner removes the record of a resource this Buckety deleted, where
// records outlive their resources (registryKept). A record kept with its
// resource (a bucket's tags) went with it: writing it now would read and
// rewrite the tags of a bucket of that name another installation may
// have created since the delete, and take its record away.
func (r *Reconciler) dropOwner(ctx context.Context, e *backends.Entry, res drivers.Resource) error {
	if e.Owners == nil || !registryKept(e) {
		return nil
	}
	var f facts
	if ok, err := r.ownerRecords(ctx, e, &f); err != nil || !ok {
		return err
	}
	if err := e.Owners.WriteOwner(ctx, res, nil); err != nil {
		return fmt.Errorf("remove the owner record of %s: %w", res.Name, err)
	}
	r.owners.put(e, res.Name, nil, 0)
	return nil
}

// retainOwner marks the record of a resource a Buckety deleted with Retain
// left on the backend, when the record is this Buckety's: retained, it is
// re-attached to nobody without the adoption keys.
func (r *Reconciler) retainOwner(ctx context.Context, b *v1.Buckety, e *backends.Entry, res drivers.Resource) error {
	_, err := r.markOwner(ctx, b, e, res, drivers.OwnerRetained, "", b.Generation)
	return err
}

// handOverOwner marks the record of a resource this Buckety holds handed
// over to the installation its backend hands its resources to
// (ownership.handOverTo), for a Buckety deleted before any pass marked it.
func (r *Reconciler) handOverOwner(ctx context.Context, b *v1.Buckety, e *backends.Entry, res drivers.Resource) error {
	_, err := r.markOwner(ctx, b, e, res, drivers.OwnerHandedOver, e.Config.HandOverTo(), b.Generation)
	return err
}

// markOwner writes state (and to, handed over) on the owner record of res
// when the record holds the resource for Buckety b (ownerMine: created or
// adopted by it, or by one of its namespace and name the record
// re-attaches), remembering it for generation gen of b. settled is true
// once the record needs nothing more: written, or holding the resource
// otherwise (retained already, another Buckety's, another
// installation's), or a backend that keeps no records; false when the
// backend shows no record of res.
func (r *Reconciler) markOwner(ctx context.Context, b *v1.Buckety, e *backends.Entry, res drivers.Resource, state drivers.OwnerState, to string, gen int64) (settled bool, err error) {
	var f facts
	if ok, err := r.ownerRecords(ctx, e, &f); err != nil || !ok {
		return err == nil, err
	}
	rec, err := r.readOwner(ctx, b, e, res, 0)
	switch {
	case err != nil:
		return false, fmt.Errorf("read the owner record of %s on backend %s: %w", res.Name, e.Name, err)
	case rec == nil:
		return false, nil
	}
	if v, _ := r.judge(rec, b, e); v != ownerMine {
		return true, nil
	}
	want := *rec
	want.Installation, want.State, want.To = r.Backends.Installation(), state, to
	if err := e.Owners.WriteOwner(ctx, res, &want); err != nil {
		return false, fmt.Errorf("mark the owner record of %s on backend %s %s: %w", res.Name, e.Name, state, err)
	}
	r.owners.put(e, res.Name, &want, gen)
	return true, nil
}

// createdElsewhere says why a resource this Buckety's claim records Created
// is not one this Buckety created, "" when nothing says so. A claim is
// recorded Created before the create, and a later pass takes the resource
// it finds for the one that create made (a crash or a lost answer may have
// come between). That holds while the Buckety never reported it
// provisioned (no status.provenance) only for an empty resource, or one
// carrying this Buckety's owner record: the record is written right after
// the create succeeds, before any access is granted, so a resource of
// buckety's own making holds content only once it carries the record. One
// that holds content and no such record was there, or was made by someone
// else, while this Buckety's create failed (a server that answered "no
// such bucket" for a bucket it could not read, then refused the create);
// taking it would converge, grant and, with retentionPolicy Delete, delete
// someone else's data. A backend that keeps no records (e.Owners nil, or
// its service cannot) cannot tell, and keeps the claim's word.
//
// unrecorded reports an empty resource with no owner record at all: this
// Buckety's create may have made it (and the pass died before its record),
// or another installation's create a moment ago, its record about to be
// written. The provisioning pass waits for the settle before it takes it
// (settleUnrecorded), as an adoption does.
func (r *Reconciler) createdElsewhere(ctx context.Context, b *v1.Buckety, e *backends.Entry, cl *v1.BucketyClaim, res drivers.Resource) (why string, unrecorded bool, err error) {
	if cl.Spec.Phase != v1.ClaimCreated || b.Status.Provenance != "" || e.Owners == nil {
		return "", false, nil
	}
	var f facts
	if ok, err := r.ownerRecords(ctx, e, &f); err != nil || !ok {
		return "", false, err
	}
	want := r.heldRecord(b, cl)
	if rec, known := r.owners.get(e, res.Name, r.memoAge(), b.Generation); known && rec.Same(want) {
		return "", false, nil
	}
	rec, err := r.readOwner(ctx, b, e, res, 0)
	if err != nil {
		return "", false, err
	}
	if rec.Same(want) {
		return "", false, nil
	}
	res.DryRun, res.CreateOnly, res.BeforeWrite, res.JustCreated = false, false, nil, false
	in, err := e.Backend.Inspect(ctx, res)
	if err != nil {
		return "", false, err
	}
	if !in.Exists {
		return "", false, nil
	}
	if !in.HasContent {
		return "", rec == nil, nil
	}
	return fmt.Sprintf("%s on backend %s holds content (%s) and no owner record of this Buckety's, which never reported it provisioned: its create did not make it (the create failed, or the resource was reported missing by mistake)", res.Name, e.Name, in.Detail), false, nil
}
