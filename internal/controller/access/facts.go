package access

import (
	"time"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// facts is what one reconcile learned.
type facts struct {
	deleting bool
	// backendDown: the Breaker held this pass back (its backend stopped
	// answering, and its status says so); it ends without a status write.
	backendDown bool
	// askedBackend: the pass got an answer of its Grant (retry.Breaker).
	askedBackend bool
	// nameTooLong: the access's metadata.name cannot label its Secret
	// (v1.AccessNameTooLong); nothing was resolved, granted or written.
	nameTooLong string
	// bucketyMissing: the referenced Buckety does not exist.
	bucketyMissing bool
	// bucketyReplaced: the Buckety the access names is not the one its
	// credentials were granted on (deleted, its finalizer stripped, and
	// applied again), and the new one has not provisioned yet.
	bucketyReplaced bool
	// grantedUIDs is, for an access naming several Bucketies, the UIDs
	// each of them (namespace/name) was granted on by the access's
	// credential records, every record's, read once a pass
	// (grantedOnAnother): a Buckety is replaced when any of them is not
	// its UID.
	grantedUIDs map[string][]string
	// missing names it (a Buckety of the access's namespace: one of
	// another is not shared).
	missing string
	// bucketyLags: the cache does not show a Buckety the API server holds
	// and the access's credentials are bound to; the access waits for
	// its cache (bucketyWaiting says so) and retries on its own, rather
	// than take back what its Secret holds (lagging.go).
	bucketyLags bool
	// notShared says why the Buckety of another namespace the access
	// names does not share with it (sharing.Refusal), or that its
	// namespace is being deleted; withdrawn is set once what the access
	// held is taken back (withdraw).
	notShared string
	withdrawn bool
	// withdrawnFrom are, for an access naming several Bucketies, those
	// that stopped sharing with it (namespace/name), and withdrawnWhy
	// why; the others are granted.
	withdrawnFrom, withdrawnWhy []string
	// elsewhere: the Buckety's resource is not this installation's to
	// grant on: its backend hands its resources over to another
	// installation, or the resource's owner record names another
	// (OwnedElsewhere: deleted out of band and created again there). The
	// access's credentials are revoked, since they are granted on the
	// resource's name.
	elsewhere bool
	// bucketyWaiting explains why the Buckety's resource is not usable yet.
	bucketyWaiting string
	// claimPending: the Buckety is provisioned, but the cache has not seen
	// its settled claim yet; nothing else will wake this access, so it
	// retries on its own.
	claimPending bool
	// recordsPending: the access was issued a credential (its status names
	// the principal), the cache holds no record of it, and the API server
	// does (a record labelled for this shard moments ago, seen on another
	// watch than the access); it retries on its own rather than issue a
	// new credential in place of the one its Secret holds.
	recordsPending string
	// reissuePaced: the Secret does not hold the access's credential (no
	// longer, or not yet: its write failed), soon after it was issued
	// again for that reason; the next issue waits (reissue.go), and
	// nothing is granted or written meanwhile. reissued: this pass
	// issues it again for that reason (counted once Grant succeeds).
	reissuePaced string
	reissued     bool
	// problem pauses reconciliation (backend gone, driver changed, major
	// mismatch).
	problem *backends.Problem
	// limitExceeded: the namespace or the Buckety is at its backend's
	// access limit, and this access waits (limits.go).
	limitExceeded string
	// invalid: the role or parameters fail the driver's validation.
	invalid string
	// BackendFailure is the driver failure, if any.
	retry.BackendFailure
	// published: the pass wrote the access's Secret and recorded what
	// it holds it for (publish).
	published bool
	// secretConflict names a Secret buckety does not own.
	secretConflict string
	// principalConflict: the access's principal exists and is not this
	// access's (credential.go).
	principalConflict string
	// revokeWaiting: a recorded credential cannot be revoked yet.
	revokeWaiting string
	// rotationDeferred: a rotation was asked for while the previous one's
	// credential is still Retiring; it runs once that one is revoked.
	rotationDeferred bool
	// wake is the earliest time a credential must be rotated or revoked
	// (zero: none).
	wake time.Time
	// issuingUnavailable: the backend's config asks for a credential per
	// access and it cannot issue one now (why); nothing was granted or
	// written.
	issuingUnavailable string
	// keptOwn: the backend no longer issues credentials per access, and the
	// access keeps the one of its own its Secret holds (this principal).
	keptOwn string
	// keptRole: the role the kept credential was last granted, when its
	// record names one other than the access's now (its tenant changed
	// spec.role since): nothing changes a kept credential's rights.
	keptRole v1.Role
	// perAccess is the driver's answer; nil when Grant did not run.
	perAccess *bool
	// sharedWhy says why not, from the driver.
	sharedWhy string
	// synced: the Secret holds the driver's payload.
	synced bool
	// secretName is the Secret written.
	secretName string
}

// wakeAt records that a credential needs the access reconciled at t.
func (f *facts) wakeAt(t time.Time) {
	if f.wake.IsZero() || t.Before(f.wake) {
		f.wake = t
	}
}
