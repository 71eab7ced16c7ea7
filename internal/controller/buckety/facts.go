package buckety

import (
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// facts is what one reconcile learned. Phases record facts; status.go turns
// them into conditions. A zero value means "not reached".
type facts struct {
	// deleting is set when the object has a deletionTimestamp.
	deleting bool
	// resourceName is the resolved backend resource name.
	resourceName string
	// recordUnmarked: a deletion keeps the claim it handles retained
	// while the owner record of its resource stays unmarked (the
	// backend is missing from the config).
	recordUnmarked bool
	// problem pauses reconciliation: backend gone, driver changed, or
	// driver major mismatch.
	problem *backends.Problem
	// templateErr: spec.name cannot be resolved.
	templateErr error
	// invalidName: the resolved name breaks the driver's rules.
	invalidName string
	// invalidParams: spec.parameters fail the driver's validation.
	invalidParams string
	// defaults are the backend's parameter defaults in effect for this
	// Buckety (status.parameterDefaults), and params spec.parameters
	// merged over them: what the driver gets and budgets count
	// (provision replaces the location parameters with the claim's), and
	// status.effectiveParameters records.
	defaults, params map[string]string
	// claim is this Buckety's claim on the backend resource.
	claim *v1.BucketyClaim
	// claimErr: claims could not be read or written (API server trouble).
	claimErr error
	// createRefused: the backend answered the create with a refusal
	// (drivers.NotCreatedError): asked again, it answers the same until
	// the spec or the backend changes, so it is retried on the slower
	// backoff (each retry writes the claim twice: Created, then Claimed).
	createRefused bool
	// refused: Ensure's error was a lasting refusal (drivers.RefusedError:
	// a broker error code Kafka does not retry, an S3 4xx, a topic that is
	// no longer the one its owner record names): asked again, the backend
	// answers the same until someone acts, so it is retried on the slower
	// backoff too; a change to the Buckety still retries at once.
	refused bool
	// conflict is the claim another, existing Buckety holds on the resource.
	conflict *claims.Conflict
	// limitExceeded: the namespace holds as many claims on the backend as
	// its limits.perNamespace allows.
	limitExceeded string
	// budgetExceeded: the namespace's partition or byte budget on the
	// backend has no room for what this Buckety asks (budget.go).
	budgetExceeded string
	// budgeted is what a claim this pass creates records against the
	// namespace's budget (nil: the backend budgets nothing summed).
	budgeted *v1.Budgeted
	// quota is what the Buckety's parameters say of its quotas, for
	// QuotaWarning (usage.go); set once the backend resolves.
	quota *drivers.Footprint
	// releaseLimit ends this pass's hold on its namespace's limit gate
	// (claim.go withinLimit); nil when it holds none.
	releaseLimit func()
	// gateBusy: another pass holds that gate; this one ends without a
	// status write and is retried soon (claim.go holdGate).
	gateBusy bool
	// backendDown: the Breaker held this pass back (its backend stopped
	// answering, and its status says so); it ends without a status write.
	backendDown bool
	// askedBackend: the pass got as far as provisioning, which asks the
	// backend (Breaker).
	askedBackend bool
	// locationChanged: a location parameter differs from what the claim
	// recorded (immutable); locationRetained: the claim was taken over
	// from a deleted Buckety, and given back (the resource lives where
	// that Buckety made it).
	locationChanged  string
	locationRetained bool
	// adoptionRefused says, in what the tenant may read, why a pre-existing
	// resource is not taken over.
	adoptionRefused string
	// ownedElsewhere says why the resource's owner record keeps this
	// Buckety out (owners.go); misnamed when the record is this Buckety's
	// under another name of this installation (InstallationMismatch).
	ownedElsewhere string
	misnamed       bool
	// recordGone says why the resource is not the one this Buckety's
	// record was on (owners.go recordGone): it has none, and the claim
	// records that it had.
	recordGone string
	// ownerFromMemo: this pass's owner check trusted the record this
	// process remembers; the first write reads it fresh (confirmOwner).
	ownerFromMemo bool
	// ownerAbsent: this pass's adoption check read the owner record of
	// an existing resource, fresh, and it had none (settleUnrecorded).
	ownerAbsent bool
	// recordsUnkept: this pass's adoption check found an existing
	// resource on a backend that keeps no owner records (unrecorded).
	recordsUnkept bool
	// ownerSettling says why an adoption waits for the resource to stay
	// without an owner record, and settleIn how much longer.
	ownerSettling string
	settleIn      time.Duration
	// usageIn: a lowered quota waits for a measurement of what its
	// bucket holds (usageAfterLowering), due in that long.
	usageIn time.Duration
	// recordAdopted: the owner record this pass's adoption check read
	// says buckety adopted the resource (drivers.OwnerRecord.Adopted).
	recordAdopted bool
	// recordForName: that record holds the resource, as this
	// installation's, for this Buckety's namespace and name (judgeOwner:
	// ownerMine), whether or not for this very Buckety (verdict: one this
	// cluster knew by another UID, its finalizer removed by hand).
	recordForName bool
	// handedOver says the resource is handed over to another installation
	// (ownership.handOverTo): nothing more is written to it.
	handedOver string
	// ownerRecordsUnavailable says the backend keeps no owner records.
	ownerRecordsUnavailable string
	// adoptionHint says what would let the refused adoption in.
	adoptionHint string
	// adoptionDrift lists how an adopted resource whose adoption is not
	// settled differs from spec.parameters; nothing was applied.
	adoptionDrift []string
	// adoptionCanConverge: the backend allows adoption, so the tenant may
	// accept adoptionDrift's changes with spec.adoption AdoptAndConverge.
	adoptionCanConverge bool
	// BackendFailure is the driver failure, if any.
	retry.BackendFailure
	// drift the driver would not repair.
	drift *drivers.DriftError
	// shortfalls are parameters the backend did not apply.
	shortfalls []drivers.Shortfall
	// provisioned: Ensure succeeded (drift aside) in this reconcile.
	provisioned bool
	// recorded: the status as read from the cache records the resource
	// provisioned for this generation (status.ProvisionedRecorded).
	recorded bool
	// held: the status this pass started from is the one an earlier pass
	// held (Held), since heldSince.
	held      bool
	heldSince time.Time
	// pendingSince: when the hold of this Buckety's Ready status for its
	// new accesses began (holdingReady).
	pendingSince time.Time
	// implicitErr: the implicit access could not be materialised.
	implicitErr string
	// accessesChecked: the access phase ran.
	accessesChecked bool
	// accessesPending lists accesses whose Secret is not in sync.
	accessesPending []string
	// pendingSpoke: a pending access has said why it is not Ready (its
	// status has a Ready condition, other than waiting for its Buckety):
	// a held status is then written at Held.Limit, not held on to
	// Held.SilentLimit.
	pendingSpoke bool
	// shared counts accesses with ScopingNotImplemented=True.
	shared int
	// blockedBy lists explicit accesses blocking deletion.
	blockedBy []string
	// waitingImplicit is set while the implicit access is being removed
	// during deletion.
	waitingImplicit bool
	// deleteProgress describes deletion progress on the backend.
	deleteProgress string
	// now is when this pass started, for the drain's times (drain.go).
	now time.Time
	// drainTerms are the drain's intervals and stuck threshold, from the
	// backend's config wherever the config knows the backend, even when
	// it did not resolve (nil: a pass that did not get that far, such as
	// a deletion; the Buckety's, else the defaults).
	drainTerms *drainTerms
	// drainTouched: this pass changed status.drain's phase or request.
	drainTouched bool
	// drainEvents are what that change records, once the status write
	// that holds it has succeeded: a pass whose write fails or is held
	// back (backend down, gate busy) finds the same change again on the
	// next, which records them then, so each is recorded once.
	drainEvents []drainEvent
}

// backendFailure is the driver failure of this reconcile, if any.
func (f *facts) backendFailure() error {
	if err := f.Err(); err != nil {
		return err
	}
	return f.claimErr
}

// unrecorded: this pass's adoption check found an existing resource no
// owner record accounts for (none read fresh, or a backend that keeps
// none): made outside buckety, as far as the records tell, so taken over
// only with both adoption keys, empty or not.
func (f *facts) unrecorded() bool { return f.ownerAbsent || f.recordsUnkept }
