package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/internal/controller/status"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/internal/sharing"
	"github.com/Yolean/buckety-controller/internal/testhook"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses/status,verbs=patch
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketyaccesses/finalizers,verbs=update
// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// HeldStatus holds the status a Buckety reconcile computed for a
// provisioned resource but has not written yet (buckety.Held): an access
// reads it as if recorded, so the Buckety's status is written once.
type HeldStatus interface {
	// Overlay replaces b's status, as read from the cache, by the one held
	// for its generation, if any, and reports when that hold started.
	Overlay(b *v1.Buckety) (since time.Time, ok bool)
}

// Reconciler reconciles BucketyAccess objects. SetupWithManager builds it
// and the controller that feeds it; tests build it directly.
type Reconciler struct {
	// Client is the manager's (cached) client.
	Client ctrl.Client
	// APIReader reads Secrets the cache does not hold (the cache holds only
	// buckety's own), to find a foreign Secret before writing.
	APIReader ctrl.Reader
	// Backends are the open backends of the controller config.
	Backends *backends.Set
	// Claims, when set, supplies the backend resource name from the
	// Buckety's claim rather than its status, which a tenant may write.
	Claims *claims.Store
	// Recorder records events on accesses; nil records none.
	Recorder events.EventRecorder
	// Recheck is the period of the re-check of the Secret and grant
	// (jittered).
	Recheck time.Duration
	// Backoff spaces retries after backend failures, independent of Recheck.
	Backoff *retry.Backoff
	// Written skips reconciles that start from a cache older than this
	// controller's own last write to the object; nil skips none.
	Written *status.Written
	// Held, when set, supplies the status the Buckety reconciler computed
	// but has not written yet (buckety.Held), read as if recorded.
	Held HeldStatus
	// LimitRetry is how soon an access waiting for an access limit looks
	// again on its own; 0: LimitRetry.
	LimitRetry time.Duration
	// Serves is the shard this controller reconciles; nil: every
	// namespace. The start's read of every Secret (prefetch.go) reads
	// only its shard's.
	Serves *shard.Serves
	// Breaker holds back the passes of accesses whose backend stopped
	// answering (retry.Breaker); nil holds none back.
	Breaker *retry.Breaker

	verified verifiedSecrets
	// prefetch reads every buckety Secret once after a start (prefetch.go).
	prefetch secretPrefetch
	// secrets holds the secret of each Secret of an access with a credential of its own
	// (credential.go).
	secrets knownSecrets
	// reassert holds the accesses the credential sweep found drifted.
	reassert reassertSet
	// gates serialise first grants under the access limits (limits.go).
	gates grantGates
	// reissues paces the issues of credentials whose Secret someone
	// else changed (reissue.go).
	reissues reissues
	// unseen are the credential records this controller deleted or
	// created that its cache may not show so yet (unseen.go).
	unseen unseenRecords
}

// Reconcile implements reconcile.Reconciler: it fetches the access, defers
// the one status write (status.Finish, from the conditions status.go
// derives), handles deletion (delete.go) or adds the finalizer, and then
// runs the phases in order (reconcileLive): check that its name can label
// its Secret, find the Buckety and check that its resource is provisioned,
// validate the role and parameters, find the resource name in the
// Buckety's claim, grant, and write the Secret (publish, secret.go).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, reterr error) {
	a := &v1.BucketyAccess{}
	if err := r.Client.Get(ctx, req.NamespacedName, a); err != nil {
		if apierrors.IsNotFound(err) {
			r.Written.Forget(req.NamespacedName)
			return reconcile.Result{}, r.revokeLeft(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if stale, after := r.Written.Stale(a); stale {
		// The cache lags this controller's own last write; that write's
		// watch event brings the object back, or it came just now and
		// the object runs again after a moment (status.Written).
		return reconcile.Result{RequeueAfter: after}, nil
	}
	orig := a.DeepCopy()
	f := &facts{}
	defer func() {
		defer r.Written.Record(a, orig.ResourceVersion)
		if f.backendDown && reterr == nil {
			// Held back: the status says the backend is unreachable,
			// and it still is. Retried as a failed pass would be.
			res = reconcile.Result{RequeueAfter: retry.HeldBackRetry(r.Backoff, a.UID)}
			return
		}
		res, reterr = status.Finish(ctx, r.Client, r.Backoff, statusFields, a, orig, status.Outcome{
			Derived: conditions(a, f), Failure: failure(f), Deleting: f.deleting, Written: r.Written,
		}, res, reterr)
	}()

	if !a.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, a, f)
	}
	if err := r.Written.AddFinalizer(ctx, r.Client, a, shard.AccessValue(a)); err != nil {
		return r.reconcileUnfinalized(ctx, a, f, err)
	}
	return r.reconcileLive(ctx, a, f)
}

// reconcileUnfinalized is the pass of an access whose finalizer could not
// be written (ferr): it grants and issues nothing, but still takes back
// what the access must no longer hold (takeBack), as reconcileLive would.
// A tenant can keep that write from ever succeeding (its access grown by
// metadata patches to just under the API server's request limit, and the
// finalizer removed): the consent of a shared Buckety's owner must not
// wait for it. An access naming several Bucketies, one or more of which
// stopped sharing, gives up all of them, as giveUp does: only a grant
// takes the rights on those alone away.
func (r *Reconciler) reconcileUnfinalized(ctx context.Context, a *v1.BucketyAccess, f *facts, ferr error) (reconcile.Result, error) {
	on, _, ok, err := r.resolve(ctx, a, f)
	if err == nil && ok && len(on.withdrawn) > 0 {
		f.notShared = fmt.Sprintf("%s; and the access cannot be granted on the rest now (its finalizer cannot be written: %v), so it gives up all of them until it can", strings.Join(on.why, "; "), ferr)
	}
	_, _, terr := r.takeBack(ctx, a, f, err == nil, reconcile.Result{})
	return reconcile.Result{}, errors.Join(ferr, err, terr)
}

// reconcileLive runs the phases of an access that is not being deleted, in
// order; each records what it found in f, from which the deferred status
// write derives the conditions.
func (r *Reconciler) reconcileLive(ctx context.Context, a *v1.BucketyAccess, f *facts) (reconcile.Result, error) {
	requeue := reconcile.Result{RequeueAfter: retry.Jitter(r.Recheck)}

	on, e, ok, err := r.resolve(ctx, a, f)
	if res, took, terr := r.takeBack(ctx, a, f, err == nil, requeue); took {
		return res, terr
	}
	if msg := v1.AccessNameTooLong(a.Name); msg != "" && err == nil {
		// Its Secret can never be written (the API server refuses the
		// label): nothing is granted or issued, which would otherwise
		// be a backend write on every pass for a Secret never written,
		// and a credential an earlier release's passes issued it (held
		// by no Secret) is revoked.
		f.nameTooLong = "metadata.name " + msg + fmt.Sprintf(": no Secret can be written for it, so nothing is granted; create the access again under a name of at most %d characters", v1.MaxAccessNameLength)
		return requeue, r.revokeCached(ctx, a, f)
	}
	if err != nil || !ok {
		return requeue, err
	}
	res, err := r.grantOn(ctx, a, on, e, f, requeue)
	// A pass cut short by an error or by a cache that lags the API
	// server runs again soon, and acts on nothing the cache may not show.
	if len(on.withdrawn) > 0 && !f.published && err == nil && f.recordsPending == "" && !f.bucketyLags {
		return r.giveUp(ctx, a, on, f, res)
	}
	return res, err
}

// takeBack takes away what resolve found the access must no longer hold,
// and reports whether it did (the pass ends there): resolved, an access a
// Buckety of another namespace no longer shares with (f.notShared) is
// withdrawn; one whose Buckety is gone, replaced or not this
// installation's to grant on has its credentials revoked.
func (r *Reconciler) takeBack(ctx context.Context, a *v1.BucketyAccess, f *facts, resolved bool, requeue reconcile.Result) (reconcile.Result, bool, error) {
	if resolved && f.notShared != "" {
		// Taken back within this pass: rights, principal and Secret.
		if done, err := r.withdraw(ctx, a, f); err != nil || !done {
			return r.withdrawAgain(f), true, err
		}
		return requeue, true, nil
	}
	if f.bucketyMissing || f.elsewhere || f.bucketyReplaced {
		// A credential never outlives the Buckety it was granted on: were
		// the name claimed again (by this namespace or, once the claim is
		// released, another), the old key must not reach the new resource.
		if err := r.revokeCached(ctx, a, f); err != nil {
			return requeue, true, err
		}
		// Nor does its place under the access limits: while its Buckety
		// is gone it is counted on no backend, and a Buckety made again
		// (its finalizer stripped, deleted, applied again) would
		// otherwise bring back every access it had, past the limits,
		// each round.
		a.Status.BucketyGeneration, a.Status.Backend, a.Status.BucketyGenerations = 0, "", nil
		a.Status.BucketyUID = ""
		r.gates.settle(a.UID)
		return requeue, true, nil
	}
	return requeue, false, nil
}

// giveUp withdraws an access naming several Bucketies, one or more of
// which stopped sharing with it, whose pass did not get as far as its
// Secret: only a pass that grants (Access.Drop) and writes the Secret
// takes the rights on those alone away, and an access held at a limit,
// invalid, waiting for a claim, kept as it is or facing a Secret it does
// not own must not keep them meanwhile. As when the rest wait
// (resolveSeveral), the access gives up every right and its Secret, and
// is granted afresh once it can be.
func (r *Reconciler) giveUp(ctx context.Context, a *v1.BucketyAccess, on *grantedOn, f *facts, res reconcile.Result) (reconcile.Result, error) {
	stuck := readiness(a, f).ready
	why := stuck.Message
	if stuck.Status == metav1.ConditionTrue {
		// Kept as it is (keepOwn): nothing narrows that credential.
		why = "the credential of its own it keeps is not narrowed by anything"
	}
	f.notShared = fmt.Sprintf("%s; and the access cannot be granted on the rest now (%s), so it gives up all of them until it can", strings.Join(on.why, "; "), why)
	if done, err := r.withdraw(ctx, a, f); err != nil || !done {
		return r.withdrawAgain(f), err
	}
	f.keptOwn = ""
	if res.RequeueAfter == 0 {
		res.RequeueAfter = retry.Jitter(r.Recheck)
	}
	return res, nil
}

// grantOn runs the phases after resolve: validation, the access limits,
// the claims, the credential, the grant and the Secret (publish, which
// sets f.published).
func (r *Reconciler) grantOn(ctx context.Context, a *v1.BucketyAccess, on *grantedOn, e *backends.Entry, f *facts, requeue reconcile.Result) (reconcile.Result, error) {
	var err error
	// Validation first: an access the driver refuses is never granted,
	// so it takes no place under the limits either (a place the gate
	// lets it take is held in memory until the access is deleted, and
	// an access that cannot be granted would hold one in its
	// namespace's, or a shared Buckety's owner's, count). A granted
	// access its backend's config now refuses keeps its place by its
	// status, as before.
	if !valid(a, e, f) {
		// One let through before its tenant made it invalid (its grant
		// stalled meanwhile) gives its place back, as a restart would:
		// unless a grant or a credential of its own holds it.
		if a.Status.BucketyGeneration == 0 {
			if held, err := r.issuedOn(ctx, a.UID, e.Name); err != nil {
				return requeue, err
			} else if !held {
				r.gates.settle(a.UID)
			}
		}
		return requeue, nil
	}
	if ok, err := r.withinLimits(ctx, a, on, e, f); err != nil || !ok {
		if err == nil && f.limitExceeded != "" && a.Status.BucketyGeneration != 0 && !grantedHere(a, on, e.Name) {
			// Granted on another backend, where a Buckety of this name
			// was before it was made again here (before a pass saw the
			// gap): that grant goes with its credentials, as for a
			// Buckety gone, and holds no place here.
			if err := r.revokeCached(ctx, a, f); err != nil {
				return reconcile.Result{}, err
			}
			a.Status.BucketyGeneration, a.Status.Backend, a.Status.BucketyGenerations = 0, "", nil
			a.Status.BucketyUID = ""
		}
		return reconcile.Result{RequeueAfter: retry.Jitter(r.limitRetry())}, err
	}
	if ok, err := r.claims(ctx, on, e, f); err != nil || !ok {
		return requeue, err
	}
	// A backend that stopped answering holds back the passes that
	// already found it so (retry.Breaker): no worker waits on it for
	// them. One naming several that stopped sharing is not held back:
	// giveUp must take those rights away.
	probe, admitted := r.Breaker.Admit(e.Name, len(on.withdrawn) == 0 && retry.FoundUnreachable(a.Status.Conditions, a.Generation))
	if !admitted {
		f.backendDown = true
		return requeue, nil
	}
	defer func() { r.Breaker.Release(ctx, "accesses", e.Name, probe, f.Outcome(f.askedBackend)) }()
	f.withdrawnFrom, f.withdrawnWhy = on.without()
	acc := on.access(a, e)
	var scoping drivers.Issuing
	var cred *v1.BucketyCredential
	if e.Issuer != nil {
		if scoping, err = e.Issuer.Issuing(ctx); err != nil {
			f.Record(err)
			return requeue, nil
		}
	}
	switch {
	case scoping.PerAccess:
		if conflict, err := r.conflictPersists(ctx, a, f); err != nil || conflict {
			if err != nil {
				return requeue, err
			}
			perAccess := true // as the pass that found the conflict granted it
			f.perAccess = &perAccess
			return reconcile.Result{RequeueAfter: ConflictRetry}, nil
		}
		if cred, err = r.credential(ctx, a, e, on, &acc, f); cred == nil || err != nil {
			if f.reissuePaced != "" && err == nil {
				return reconcile.Result{RequeueAfter: time.Until(f.wake) + time.Second}, nil
			}
			if f.secretConflict != "" && err == nil {
				// The Secret is not the access's (secretToAssert):
				// reported as writeSecret would, and checked again
				// (conflictPersists) without a backend write.
				perAccess := true
				f.perAccess = &perAccess
				return reconcile.Result{RequeueAfter: ConflictRetry}, nil
			}
			return requeue, err
		}
		if acc.Drop = on.dropFrom(cred); len(acc.Drop) > 0 {
			acc.Assert = max(acc.Assert, drivers.Reassert)
		}
		if wider, err := r.widen(ctx, on, cred); err != nil {
			return requeue, err
		} else if wider {
			acc.Assert = max(acc.Assert, drivers.Reassert)
		}
		if err := r.roleChanging(ctx, cred, roleOf(a)); err != nil {
			return requeue, err
		}
	case scoping.Required:
		// The config asks for a credential per access and the backend
		// cannot issue one now: the Secret stays as it is, and the
		// backend's own credentials are never written instead.
		f.issuingUnavailable = scoping.Reason
		return requeue, nil
	default:
		if kept, err := r.keepOwn(ctx, a, e, on, f); kept || err != nil {
			return requeue, err
		}
	}
	g, err := e.Backend.Grant(ctx, acc)
	f.askedBackend = true
	if err == nil && f.reissued {
		// Counted for the pacing as soon as the backend issued it, not
		// once the Secret holds it: a Secret whose write keeps failing
		// must not make every retry a backend write (reissue.go).
		r.reissues.done(a.UID, time.Now())
	}
	if drivers.IsPrincipalExists(err) {
		f.principalConflict = err.Error()
		return requeue, nil
	}
	if err != nil {
		if cred != nil && refusedOutright(ctx, err) {
			// A narrowing the backend refuses (a bucket policy with no
			// room for the role's statements) fails closed: a key that
			// may still hold the wider role is revoked rather than left
			// with rights its access no longer names. The next pass
			// issues a key for the narrower role, which the same
			// refusal keeps from being granted. A backend that did not
			// answer is asked again instead.
			var rerr error
			if err, rerr = r.failClosed(ctx, a, e, cred, err, f); rerr != nil {
				return requeue, rerr
			}
		}
		f.Record(err)
		return requeue, nil
	}
	perAccess := g.PerAccess
	f.perAccess = &perAccess
	f.sharedWhy = scoping.Reason
	if f.sharedWhy == "" {
		f.sharedWhy = g.Reason
	}
	prev := a.Status.Principal
	a.Status.Principal = g.Principal
	if cred != nil {
		testhook.Pause(ctx, testhook.AfterIssue)
	}
	res, err := r.publish(ctx, a, e, on, cred, g.Data, f, requeue)
	if cred != nil && !f.published && prev != "" {
		// The status names the principal the Secret was last known to
		// hold: were it to name a rotation's new one that the Secret
		// does not hold (its write refused, a policy denying it), the
		// next pass would take that rotation for done and issue yet
		// another credential, one more each pass while the write keeps
		// failing (rotationDue). It finishes this one instead.
		a.Status.Principal = prev
	}
	return res, err
}

// failClosed, once the backend refused outright (gerr) to grant the
// access's role to cred, revokes every credential of the access on e that
// may still hold a role wider than that one (widerThanItsAccess): cred
// itself, narrowed in place, and any other, such as the Active one the
// Secret holds (status.principal) when its tenant rotated and narrowed
// the role in one edit, which cred, born with the narrower role, was to
// replace. Each revocation is added to the error the pass records, and
// told in a CredentialRevoked event. It returns that error, and the
// failure of a revocation or of the listing (the pass ends there).
func (r *Reconciler) failClosed(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, cred *v1.BucketyCredential, gerr error, f *facts) (error, error) {
	var wider []*v1.BucketyCredential
	if widerThanItsAccess(cred, a) {
		wider = append(wider, cred)
	}
	creds, err := r.credentials(ctx, a.UID)
	if err != nil {
		return gerr, err
	}
	for i := range creds {
		c := &creds[i]
		if c.Spec.Backend == e.Name && c.Name != cred.Name && widerThanItsAccess(c, a) {
			wider = append(wider, c)
		}
	}
	for _, c := range wider {
		if _, err := r.revoke(ctx, c, f); err != nil {
			return gerr, err
		}
		gerr = fmt.Errorf("%w; credential %s, granted role %s, was revoked: role %s could not be granted in its place, and a key keeps no right its access no longer names", gerr, c.Spec.Principal, c.Spec.Role, roleOf(a))
		r.event(a, corev1.EventTypeWarning, v1.EventCredentialRevoked, v1.EventActionWriteSecret, gerr.Error())
	}
	return gerr, nil
}

// refusedOutright reports whether err is the backend's answer refusing a
// grant (drivers.RefusedError: asking again gets the same answer), not one
// it failed to give: a backend that did not answer, a server error or a
// throttled request that outlasted the driver's retries, a pass cut short
// (a shutdown), or buckety's own keys refused are asked again rather than
// taken for a refusal of the grant itself, and revoke nothing.
func refusedOutright(ctx context.Context, err error) bool {
	return ctx.Err() == nil && drivers.IsRefused(err) && !drivers.IsUnavailable(err) && !drivers.IsAccessDenied(err) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// resolve finds the Buckety the access names (buckety), or each of
// several (resolveSeveral).
func (r *Reconciler) resolve(ctx context.Context, a *v1.BucketyAccess, f *facts) (*grantedOn, *backends.Entry, bool, error) {
	if a.Several() {
		return r.resolveSeveral(ctx, a, f)
	}
	b, e, ok, err := r.buckety(ctx, a, f)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	return single(b), e, true, nil
}

// valid checks the access's parameters and secret formats against its
// backend's driver, recording what is wrong in f. Warnings are the
// webhook's to show; ScopingNotImplemented carries them here.
func valid(a *v1.BucketyAccess, e *backends.Entry, f *facts) bool {
	_, errs := e.Driver.ValidateAccess(field.NewPath("spec", "parameters"), e.Config.Options(), drivers.Role(a.Spec.Role), a.Spec.Parameters)
	errs = append(errs, drivers.ValidateSecretFormats(field.NewPath("spec", "secretFormats"), e.Driver, a.Spec.SecretFormats)...)
	errs = append(errs, validSeveral(a, e)...)
	if len(errs) > 0 {
		f.invalid = errs.ToAggregate().Error()
		return false
	}
	return true
}

// publish writes what the grant returned to the access's Secret and, for
// a credential of its own, settles its record (rotation, revocation of
// the ones it replaced), waking the access when a grace ends.
func (r *Reconciler) publish(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, on *grantedOn, cred *v1.BucketyCredential, data map[string][]byte, f *facts, requeue reconcile.Result) (reconcile.Result, error) {
	conflict, err := r.writeSecret(ctx, a, data, f)
	if err != nil {
		return requeue, err
	}
	if conflict {
		return reconcile.Result{RequeueAfter: ConflictRetry}, nil
	}
	if cred != nil {
		secret := drivers.SecretOf(e.Issuer, cred.Spec.Principal, data)
		r.secrets.put(a.UID, r.verified.resourceVersion(a.UID), cred.Spec.Principal, secret)
		if err := r.settle(ctx, a, e, on, cred, secret, f); err != nil {
			return requeue, err
		}
	}
	if !f.wake.IsZero() {
		// A rotation due, or a Buckety held at its limit (regain),
		// whatever the backend's credentials.
		if d := time.Until(f.wake) + time.Second; d < requeue.RequeueAfter {
			requeue.RequeueAfter = d
		}
	}
	on.written(a, e.Name)
	f.published = true
	return requeue, nil
}

// failure classifies this reconcile for the retry backoff; an access
// waiting for its Buckety is woken by the Buckety watch instead.
func failure(f *facts) retry.Failure {
	switch {
	case f.Unavailable != nil, f.Other != nil, f.claimPending, f.recordsPending != "", f.bucketyLags:
		return retry.Transient
	case f.AccessDenied != nil, f.revokeWaiting != "":
		return retry.Permanent
	}
	return retry.None
}

// buckety finds the access's Buckety and its backend, and checks that its
// backend resource is provisioned for the Buckety's current generation.
func (r *Reconciler) buckety(ctx context.Context, a *v1.BucketyAccess, f *facts) (*v1.Buckety, *backends.Entry, bool, error) {
	return r.bucketyOf(ctx, a, a.Spec.BucketyRef, f)
}

// grantedOnAnother reports whether the access's credentials were granted
// on another Buckety of the name namespace/name than the one of UID uid:
// the access's status says so for an access naming one (the Buckety its
// Secret was last written for); for one naming several, its credential
// records do, each resource with its Buckety's UID (a record of an older
// release holds the first one's alone), read once a pass into f. An
// access granted nothing yet was granted on none.
func (r *Reconciler) grantedOnAnother(ctx context.Context, a *v1.BucketyAccess, namespace, name string, uid types.UID, f *facts) (bool, error) {
	if !a.Several() {
		return a.Status.BucketyUID != "" && a.Status.BucketyUID != uid, nil
	}
	if f.grantedUIDs == nil {
		creds, err := r.credentials(ctx, a.UID)
		if err != nil {
			return false, err
		}
		f.grantedUIDs = map[string][]string{}
		first := a.Spec.BucketyRefs[0]
		firstKey := a.RefNamespace(first) + "/" + first.Name
		for i := range creds {
			c := &creds[i].Spec
			if len(c.Resources) == 0 {
				if c.BucketyUID != "" {
					f.grantedUIDs[firstKey] = append(f.grantedUIDs[firstKey], c.BucketyUID)
				}
				continue
			}
			for _, res := range c.Resources {
				f.grantedUIDs[res.Buckety] = append(f.grantedUIDs[res.Buckety], res.BucketyUID)
			}
		}
	}
	for _, granted := range f.grantedUIDs[namespace+"/"+name] {
		if granted != string(uid) {
			return true, nil
		}
	}
	return false, nil
}

// bucketyOf is buckety for one of the Bucketies the access names.
func (r *Reconciler) bucketyOf(ctx context.Context, a *v1.BucketyAccess, ref v1.BucketyReference, f *facts) (_ *v1.Buckety, _ *backends.Entry, ok bool, err error) {
	b := &v1.Buckety{}
	ns := a.RefNamespace(ref)
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, b)
	if apierrors.IsNotFound(err) {
		// The cache's word alone takes nothing back (lagging.go).
		if lag, err := r.cacheLags(ctx, a, types.NamespacedName{Namespace: ns, Name: ref.Name}, f); err != nil || lag {
			return nil, nil, false, err
		}
		if ns != a.Namespace {
			// Said as of a Buckety that does not share: another
			// namespace's Bucketies are not a tenant's to enumerate.
			f.notShared = sharing.NotShared(ns, ref.Name, a.Namespace, a.Spec.Role)
			return nil, nil, false, nil
		}
		f.bucketyMissing, f.missing = true, ref.Name
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	replaced, err := r.grantedOnAnother(ctx, a, ns, ref.Name, b.UID, f)
	if err != nil {
		return nil, nil, false, err
	}
	if replaced {
		// Not the Buckety the access's credentials were granted on: that
		// one was deleted (its finalizer stripped) and this one applied
		// under its name, and the pass never saw the gap. Where this one
		// cannot be granted on now (not provisioned yet, being deleted,
		// its backend gone), those credentials are revoked at once, as
		// for a missing Buckety, not once it has provisioned (when the
		// grant's own pass revokes them) or at the orphan check. For an
		// access naming several, one such Buckety revokes the one
		// credential they share, which the access is granted afresh once
		// every one can be. One that no longer shares with the access is
		// withdrawn instead (f.notShared): for an access naming several,
		// its rights alone go, and the others' key stays.
		defer func() {
			if !ok && err == nil && f.notShared == "" {
				f.bucketyReplaced = true
				if f.bucketyWaiting != "" {
					f.bucketyWaiting += fmt.Sprintf("; Buckety %s is not the one the access's credentials were granted on (that one was deleted and this one applied under its name), so those were revoked", refNameOf(a, ref))
				}
			}
		}()
	}
	if r.Held != nil {
		r.Held.Overlay(b)
	}
	if ns != a.Namespace {
		// The owner's consent, checked on every pass: a rule removed, a
		// role narrowed, a label changed or the owner's namespace going
		// takes the rights back now, deleting or not.
		msg, err := r.consent(ctx, a, b)
		if err != nil || msg != "" {
			f.notShared = msg
			return nil, nil, false, err
		}
	}
	if prov := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionProvisioned); prov != nil && prov.Status == metav1.ConditionFalse && (prov.Reason == v1.ReasonOwnedElsewhere || prov.Reason == v1.ReasonResourceReplaced) {
		// Another installation's record stands on the resource now (the
		// name was free when this one created it, and was deleted out
		// of band since and created again there), or a resource with no
		// record stands where the Buckety's record was (ResourceReplaced:
		// created again by someone outside buckety): the credentials
		// this installation issued on the name would reach someone
		// else's data.
		f.bucketyWaiting = fmt.Sprintf("Buckety %s's backend resource is not this installation's (%s: %s): a credential of its own this installation issued to the access is revoked", refNameOf(a, ref), prov.Reason, prov.Message)
		f.elsewhere = true
		return nil, nil, false, nil
	}
	if !b.DeletionTimestamp.IsZero() {
		f.bucketyWaiting = fmt.Sprintf("Buckety %s is being deleted", refNameOf(a, ref))
		return nil, nil, false, nil
	}
	e, problem := backends.Resolve(r.Backends, b.Spec.Backend,
		backends.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
	if problem != nil {
		f.problem = problem
		return nil, nil, false, nil
	}
	if to := e.Config.HandOverTo(); to != "" {
		// The backend's resources go to another installation: credentials
		// this one issued on them stop working (reconcileLive revokes).
		f.bucketyWaiting = fmt.Sprintf("backend %s hands its resources over to installation %s (ownership.handOverTo): the credentials this installation issued on it are revoked", e.Name, to)
		f.elsewhere = true
		return nil, nil, false, nil
	}
	prov := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionProvisioned)
	if b.Status.BackendResourceName == "" || prov == nil || prov.Status != metav1.ConditionTrue || prov.ObservedGeneration != b.Generation {
		msg := fmt.Sprintf("waiting for Buckety %s to provision its backend resource", b.Name)
		if prov != nil && prov.Status != metav1.ConditionTrue {
			msg += " (" + prov.Reason + ": " + prov.Message + ")"
		}
		f.bucketyWaiting = msg
		return nil, nil, false, nil
	}
	return b, e, true, nil
}

// resource is b's settled claim on its backend resource: the name the
// controller wrote and tenants cannot, and the location it recorded.
func (r *Reconciler) resource(ctx context.Context, b *v1.Buckety, e *backends.Entry, f *facts) (*v1.BucketyClaim, bool, error) {
	owned, err := r.Claims.OwnedBy(ctx, b)
	if err != nil {
		return nil, false, err
	}
	for i := range owned {
		cl := &owned[i]
		if cl.Spec.Backend == e.Name && cl.Spec.ResourceName == b.Status.BackendResourceName && (cl.Spec.Phase == v1.ClaimCreated || cl.Spec.Phase == v1.ClaimAdopted) {
			return cl, r.sameService(ctx, b, e, cl, f), nil
		}
	}
	f.bucketyWaiting = fmt.Sprintf("waiting for Buckety %s to hold its claim on %s", b.Name, b.Status.BackendResourceName)
	f.claimPending = true
	return nil, false, nil
}

// sameService reports whether backend e reaches the service claim cl
// records its resource on (spec.serviceID; a claim without it, or a
// backend that cannot tell, is trusted): false, with the reason in f,
// when it reaches another, as after its seedBrokers were pointed at
// another cluster. The access then grants nothing there, and its Secret
// and credentials stay as they are: revoking would write on that other
// service, and the Buckety's status may still say Provisioned from before
// the change, so the backend itself is asked (once per process).
func (r *Reconciler) sameService(ctx context.Context, b *v1.Buckety, e *backends.Entry, cl *v1.BucketyClaim, f *facts) bool {
	if cl.Spec.ServiceID == "" {
		return true
	}
	id, err := drivers.ServiceIDOf(ctx, e.Backend)
	switch {
	case err != nil:
		f.Record(fmt.Errorf("read the identity of the service backend %s reaches: %w", e.Name, err))
		return false
	case id == cl.Spec.ServiceID:
		return true
	case id == "":
		f.Record(fmt.Errorf("backend %s's service answered without an identity, and Buckety %s's resource %s is recorded on service %q: asked again before anything is granted", e.Name, b.Name, cl.Spec.ResourceName, cl.Spec.ServiceID))
		return false
	}
	f.bucketyWaiting = fmt.Sprintf("Buckety %s's resource %s is on service %q, and backend %s reaches %q now (%s): nothing is granted there, and the Secret is kept as it is", b.Name, cl.Spec.ResourceName, cl.Spec.ServiceID, e.Name, id, v1.ReasonServiceChanged)
	return false
}

func (r *Reconciler) event(a *v1.BucketyAccess, typ, reason, action, note string) {
	// A conflict is retried every few seconds; report it once per episode.
	if reason == v1.EventSecretConflict {
		if c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady); c != nil && c.Reason == v1.ReasonSecretConflict {
			return
		}
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(a, nil, typ, reason, action, "%s", note)
	}
}

// withdrawRetry is how soon a withdrawal whose revocation the cache does
// not show yet is finished.
const withdrawRetry = time.Second

// withdrawAgain is when an unfinished withdrawal is tried again: after
// withdrawRetry, but on the slow backoff (failure: Permanent) while a
// credential waits for its backend to come back to the config
// (revokeWaiting), which no pass can change: each pass lists the access's
// credential records, and it came back each second for as long as the
// maintainer took.
func (r *Reconciler) withdrawAgain(f *facts) reconcile.Result {
	if f.revokeWaiting != "" && r.Backoff != nil {
		return reconcile.Result{}
	}
	return reconcile.Result{RequeueAfter: withdrawRetry}
}

// refName names the Buckety an access names, in messages: its name, or
// namespace/name when it is another namespace's; for an access naming
// several, the first few of them.
func refName(a *v1.BucketyAccess) string {
	if !a.Several() {
		return refNameOf(a, a.Spec.BucketyRef)
	}
	refs := a.Spec.BucketyRefs
	names := make([]string, 0, min(len(refs), namedInMessages))
	for _, ref := range refs[:min(len(refs), namedInMessages)] {
		names = append(names, refNameOf(a, ref))
	}
	out := strings.Join(names, ", ")
	if more := len(refs) - len(names); more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

// namedInMessages is how many of an access's several Bucketies a message
// names.
const namedInMessages = 5

// refNameOf names Buckety ref of access a in messages: its name, or
// namespace/name when it is another namespace's.
func refNameOf(a *v1.BucketyAccess, ref v1.BucketyReference) string {
	if ns := a.RefNamespace(ref); ns != a.Namespace {
		return ns + "/" + ref.Name
	}
	return ref.Name
}

// consent says why Buckety b, of another namespace, does not share with
// access a now (sharing.Check), or that its namespace is being deleted; ""
// when it shares. A backend that cannot be resolved judges nothing: the
// Buckety's own rules alone then (sharing.RulesRefusal), and the pass
// reports the backend's problem as for any access.
func (r *Reconciler) consent(ctx context.Context, a *v1.BucketyAccess, b *v1.Buckety) (string, error) {
	if !b.DeletionTimestamp.IsZero() {
		gone, err := r.ownerNamespaceGoing(ctx, b.Namespace)
		if err != nil {
			return "", err
		}
		if gone {
			// Said only to an access the Buckety's rules let in: to any
			// other, a namespace being deleted reads as every refusal
			// does, so that a tenant learns nothing of another
			// namespace's Bucketies from names it makes up.
			if why, err := sharing.RulesRefusal(ctx, r.Client, b, a.Namespace, a.Spec.Role); err != nil || why != "" {
				return why, err
			}
			return fmt.Sprintf("namespace %s, which holds Buckety %s, is being deleted: it shares nothing any more", b.Namespace, b.Name), nil
		}
	}
	e, problem := backends.Resolve(r.Backends, b.Spec.Backend,
		backends.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
	if problem != nil {
		// No backend to judge by: the Buckety's own rules still say
		// no where they do, so an access they do not let in stays
		// withdrawn (and holds no deletion back) while its backend is
		// out of the config. One they let in is judged by the backend
		// when it is back; the pass reports the problem meanwhile.
		return sharing.RulesRefusal(ctx, r.Client, b, a.Namespace, a.Spec.Role)
	}
	return sharing.Check(ctx, r.Client, e.Config, b, a.Namespace, a.Spec.Role)
}

// ownerNamespaceGoing reports whether namespace ns is being deleted: the
// Bucketies it holds then share nothing, and the accesses of other
// namespaces give them up rather than hold their deletion back.
func (r *Reconciler) ownerNamespaceGoing(ctx context.Context, ns string) (bool, error) {
	n := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
		return apierrors.IsNotFound(err), ctrl.IgnoreNotFound(err)
	}
	return !n.DeletionTimestamp.IsZero() || n.Status.Phase == corev1.NamespaceTerminating, nil
}
