package access

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketycredentials,verbs=get;list;watch;create;patch;delete

// Per-access credentials on a backend that scopes them
// (drivers.CredentialIssuer). Before a principal is created on the
// backend, a BucketyCredential records it (phase Minting); the access's
// Secret is the only store of its secret. So:
//
//   - a principal that exists on the backend before its record is not
//     buckety's: the access reports PrincipalConflict and the principal is
//     never altered or deleted;
//   - a crash between the issue and the Secret write leaves a Minting
//     record: the next pass issues again with a new secret (the driver's
//     upsert replaces the lost one), writes the Secret, and marks it
//     Active; if the access is gone by then, the orphan sweep revokes it;
//   - a Secret deleted or emptied by its tenant gets a new secret for the
//     same principal, which makes the old one fail at once;
//   - deleting the access revokes every principal it has a record of
//     (rights, then the principal), then deletes the records, then the
//     Secret, then the finalizer.

// CredentialName names the record of principal on service: one principal
// of one service has one record, so creating it is atomic across
// controller replicas.
func CredentialName(service, principal string) string {
	sum := sha256.Sum256([]byte(service + "\x00" + principal))
	return "bkycred-" + hex.EncodeToString(sum[:20])
}

// credentials lists the records of access uid, from the cache.
func (r *Reconciler) credentials(ctx context.Context, uid types.UID) ([]v1.BucketyCredential, error) {
	var list v1.BucketyCredentialList
	if err := r.Client.List(ctx, &list, ctrl.MatchingFields{objects.IndexCredentialOwner: string(uid)}); err != nil {
		return nil, fmt.Errorf("list credentials: %w", err)
	}
	out := list.Items[:0]
	for _, c := range list.Items {
		if c.Spec.Owner.UID == string(uid) {
			out = append(out, c)
		}
	}
	// Not those this controller revoked that the cache still shows
	// (revoked.go).
	return r.unseen.filter(uid, out), nil
}

// credential finds or records the access's current credential and fills
// acc's Principal, Secret and Assert. It returns nil, with the reason in
// f, when the access must not be granted anything. It also rotates: when
// spec.rotation differs from status.rotation, or the current credential
// is older than the backend's credentials.maxAge, it records the next
// serial, which this pass issues and writes to the Secret (settle then
// retires the previous one), unless a previous rotation's credential is
// still Retiring: then it waits for that one's revocation (and
// status.rotation keeps the value last honoured). Retiring
// credentials past their retireAfter are revoked here.
func (r *Reconciler) credential(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, on *grantedOn, acc *drivers.Access, f *facts) (*v1.BucketyCredential, error) {
	now := time.Now()
	cur, top, retiring, named, err := r.liveCredential(ctx, a, e, on, f, now)
	if err != nil {
		return nil, err
	}
	if a.Status.Principal != "" && !named {
		if pending, err := r.recordsPending(ctx, a, e, top, f); pending || err != nil {
			return nil, err
		}
	}
	made := ""
	if why := rotationDue(a, e, cur, retiring, f, now); why != "" {
		if taken, err := r.secretTaken(ctx, a, f); taken || err != nil {
			return nil, err
		}
		next, secret, err := r.rotate(ctx, a, e, on, acc, cur, top+1, why, f)
		if next == nil || err != nil {
			return nil, err
		}
		cur, made = next, secret
	}
	acc.Principal = cur.Spec.Principal
	if made != "" {
		// Recorded in this pass with the secret made for it: no Secret
		// holds it yet, so there is nothing to read.
		acc.Secret, acc.Assert = made, max(acc.Assert, drivers.IssueNew)
		r.reassert.take(a.UID) // asserted now in any case
		return cur, nil
	}
	if err := r.secretToAssert(ctx, a, e, cur, acc, f); err != nil || f.reissuePaced != "" || f.secretConflict != "" {
		return nil, err
	}
	return cur, nil
}

// recordsPending reports whether the API server holds credential records
// of the access on e that the cache does not, for an access whose status
// says it was issued a credential and whose cache shows no record. Watches
// of two kinds are not ordered: a replica can see an access before the
// record of the credential its Secret holds (objects written before
// shards, labelled for their shard one by one, or a cache just started).
// Issuing a "first" credential then would replace the tenant's working
// one; the access waits for its cache instead (f.recordsPending).
//
// The same holds for a cache that shows older records but not the one the
// status names (top, the highest serial cached, is not 0): a rotation
// that just wrote its new credential to the Secret, seen by a pass before
// its record. Taking the previous one for current then would give it a
// new password (the Secret holds no secret for it), cutting its grace
// short, and write it back to the Secret in place of the new one. The
// access waits while the API server holds the record its status names.
//
// Read from the API server only in these cases, never on a pass whose
// cache shows the record its status names.
func (r *Reconciler) recordsPending(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, top int, f *facts) (bool, error) {
	var list v1.BucketyCredentialList
	if err := r.APIReader.List(ctx, &list, ctrl.MatchingLabels{v1.ClaimOwnerLabel: string(a.UID)}); err != nil {
		return false, fmt.Errorf("list credentials: %w", err)
	}
	n := 0
	for _, c := range list.Items {
		if c.Spec.Owner.UID == string(a.UID) && c.Spec.Backend == e.Name && (top == 0 || c.Spec.Principal == a.Status.Principal) {
			n++
		}
	}
	if n == 0 {
		return false, nil
	}
	f.recordsPending = fmt.Sprintf("waiting for this controller's cache to show the %d credential record(s) of principal %s that the API server holds, rather than issue a new credential in place of the one Secret %s holds", n, a.Status.Principal, a.Spec.CredentialsSecretName)
	return true, nil
}

// liveCredential sorts out the access's credentials on e: it revokes
// those granted on another Buckety or claim, and the retiring ones past
// their retireAfter, and returns the newest of the rest that is not
// retiring (nil: none), the highest serial of any, whether one is still
// retiring (f wakes the access when it is due), and whether the cache
// shows a record of the principal the access's status names (every pass
// of an access whose Secret holds its credential finds one).
func (r *Reconciler) liveCredential(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, on *grantedOn, f *facts, now time.Time) (cur *v1.BucketyCredential, top int, retiring, named bool, err error) {
	creds, err := r.credentials(ctx, a.UID)
	if err != nil {
		return nil, 0, false, false, err
	}
	for i := range creds {
		c := &creds[i]
		if c.Spec.Backend != e.Name {
			continue
		}
		top = max(top, int(c.Spec.Serial))
		named = named || c.Spec.Principal == a.Status.Principal
		if !on.boundTo(c) {
			// Granted on another Buckety or claim (the Buckety was
			// deleted with its finalizer removed and made again, or the
			// claim changed hands): revoked now, and a new one issued.
			if _, err := r.revoke(ctx, c, f); err != nil {
				return nil, 0, false, false, err
			}
			continue
		}
		if c.Spec.Phase == v1.CredentialRetiring {
			// Due, or granted on a Buckety that stopped sharing:
			// a Grant drops those rights from the current
			// credential alone, and a retiring one kept them until
			// its retireAfter (a tenant rotating every grace kept
			// one for ever).
			// So is one holding a role wider than its access's now:
			// its tenant narrowed the role, and a key it retired
			// (leaked, perhaps: why rotate) must not keep the rights
			// it took away for the grace.
			if c.Spec.RetireAfter == nil || !now.Before(c.Spec.RetireAfter.Time) || on.withdrawnFrom(c) || widerThanItsAccess(c, a) {
				if _, err := r.revoke(ctx, c, f); err != nil {
					return nil, 0, false, false, err
				}
			} else {
				retiring = true
				f.wakeAt(c.Spec.RetireAfter.Time)
			}
			continue
		}
		if cur == nil || c.Spec.Serial > cur.Spec.Serial {
			cur = c
		}
	}
	return cur, top, retiring, named, nil
}

// widerThanItsAccess reports whether credential c was last granted a role
// with rights access a's role no longer has (ReadWrite against ReadOnly or
// WriteOnly; ReadOnly against WriteOnly, and back). A record that names no
// role (an earlier release's) is not judged.
func widerThanItsAccess(c *v1.BucketyCredential, a *v1.BucketyAccess) bool {
	role := roleOf(a)
	return c.Spec.Role != "" && c.Spec.Role != role && role != v1.RoleReadWrite
}

// roleKept reports whether credential c's record already says role: the
// same, or none (an earlier release's record) for ReadWrite, which is not
// written for that alone (it would write every record once).
func roleKept(c *v1.BucketyCredential, role v1.Role) bool {
	return c.Spec.Role == role || (c.Spec.Role == "" && role == v1.RoleReadWrite)
}

// spanRoles is the narrowest role with the rights of both: a principal
// mid-change between them may hold either. A record without a role (an
// earlier release's) may hold any.
func spanRoles(was, role v1.Role) v1.Role {
	if was == role {
		return role
	}
	return v1.RoleReadWrite
}

// roleChanging records in c, before a Grant gives it role, a role that
// covers both what it held and role (spanRoles): a pass cut short after
// the Grant, before activate records role exactly, leaves a record that
// is never narrower than what the principal holds, so a narrowing that
// follows still finds it wider (widerThanItsAccess). One write, only when
// the role changes.
func (r *Reconciler) roleChanging(ctx context.Context, c *v1.BucketyCredential, role v1.Role) error {
	if roleKept(c, role) {
		return nil
	}
	span := spanRoles(c.Spec.Role, role)
	if c.Spec.Role == span {
		return nil
	}
	before := c.DeepCopy()
	c.Spec.Role = span
	if err := r.Client.Patch(ctx, c, ctrl.MergeFromWithOptions(before, ctrl.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("record the role credential %s is about to be granted: %w", c.Spec.Principal, err)
	}
	return nil
}

// rotationDue says why the access needs its next credential now ("": it
// does not): it has none, its tenant changed spec.rotation, or cur is
// older than the backend's credentials.maxAge (f wakes the access when it
// will be). One rotation at a time: while a previous credential is still
// retiring, the next waits (f.rotationDeferred), so an access has at most
// two credentials however often its tenant changes spec.rotation.
func rotationDue(a *v1.BucketyAccess, e *backends.Entry, cur *v1.BucketyCredential, retiring bool, f *facts, now time.Time) string {
	why := ""
	switch {
	case cur == nil:
		return "first"
	case cur.Spec.Phase != v1.CredentialActive:
	case a.Status.Principal != cur.Spec.Principal:
		// Born Active but not yet handed over (a rotation cut short after
		// its record): this pass finishes it before any next one, so a
		// crash mid-rotation does not issue a third credential.
	case a.Spec.Rotation != a.Status.Rotation:
		why = fmt.Sprintf("spec.rotation %q", a.Spec.Rotation)
	case e.Config.CredentialMaxAge() > 0:
		due := cur.CreationTimestamp.Add(e.Config.CredentialMaxAge())
		if !now.Before(due) {
			why = fmt.Sprintf("older than credentials.maxAge %s", e.Config.CredentialMaxAge())
		} else {
			f.wakeAt(due)
		}
	}
	if why != "" && retiring {
		why, f.rotationDeferred = "", true
	}
	return why
}

// rotate records the credential of serial (record), and, when it
// replaces cur, tells the tenant which principal replaces which and why.
func (r *Reconciler) rotate(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, on *grantedOn, acc *drivers.Access, cur *v1.BucketyCredential, serial int, why string, f *facts) (*v1.BucketyCredential, string, error) {
	next, secret, err := r.record(ctx, a, e, on, acc, serial, f)
	if next == nil || err != nil {
		return nil, "", err
	}
	if cur != nil {
		r.event(a, corev1.EventTypeNormal, v1.EventCredentialRotated, v1.EventActionWriteSecret,
			fmt.Sprintf("issuing %s to replace %s (%s); %s keeps working for %s", next.Spec.Principal, cur.Spec.Principal, why, cur.Spec.Principal, e.Config.RotationGrace()))
	}
	return next, secret, nil
}

// secretToAssert fills acc's Secret with what the access's Secret holds
// for cur's principal, and decides how far this pass asserts it on the
// backend (Assert: Reassert, or IssueNew for a principal being issued;
// never less than what recording it in this pass set). A Secret someone
// else changed soon after the last such issue waits (f.reissuePaced).
func (r *Reconciler) secretToAssert(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, cur *v1.BucketyCredential, acc *drivers.Access, f *facts) error {
	secret, fresh, stale, err := r.secretOf(ctx, a, e.Issuer, cur.Spec.Principal, cur.Spec.Phase == v1.CredentialMinting)
	if foreign := (*foreignSecretError)(nil); errors.As(err, &foreign) {
		// The Secret is there and not the access's: the pass ends as
		// the conflict writeSecret would report, before any Grant. Had
		// it read as holding nothing, the credential would be issued
		// again (a new password on the backend) while the workload
		// still uses the one that Secret holds.
		a.Status.Secret = nil
		f.secretName = a.Spec.CredentialsSecretName
		f.secretConflict = conflictMessage(a, foreign.secret)
		r.event(a, corev1.EventTypeWarning, v1.EventSecretConflict, v1.EventActionWriteSecret, f.secretConflict)
		return nil
	}
	if err != nil {
		return err
	}
	acc.Secret = secret
	// A Secret read afresh (edited, or this process is new) is asserted
	// unless it holds the secret last asserted for the principal: a
	// restart re-asserts nothing, an edited password is made the
	// backend's.
	// A Secret written under a setting the backend no longer issues with
	// (kadm: another SASL mechanism, stale) is asserted as an edited one
	// is: before the Secret names the new setting, and paced as an edit
	// (a Secret whose write keeps failing, or that its tenant keeps
	// writing so, must not make every pass a backend write).
	edited := fresh && (secret == "" || cur.Spec.SecretDigest != SecretDigest(secret) || stale)
	drifted := r.reassert.take(a.UID)
	if edited && !drifted && acc.Assert != drivers.IssueRecorded {
		// A new secret is issued for the principal on the backend: its
		// Secret, which held it, was changed or deleted by someone other
		// than buckety; or the Secret never came to hold it (a Minting
		// record, a rotation not handed over yet) because its write
		// keeps failing (a Secret made immutable, a quota, an admission
		// policy). Either way, issued again, paced (reissue.go): each
		// issue counts as soon as the backend made it, written or not.
		// The first issue of a principal recorded in this very pass is
		// no issue again.
		now := time.Now()
		if at, last, first := r.reissues.next(a.UID, now); now.Before(at) {
			switch {
			case stale:
				f.reissuePaced = fmt.Sprintf("Secret %s was written under settings backend %s no longer issues with (its sasl.mechanism, say, after credentials.mechanism changed), and buckety set the credential of principal %s for the new ones at %s: while the Secret is not rewritten (its write fails, or someone other than buckety writes it back), that is done again at most every %s, next at %s",
					a.Spec.CredentialsSecretName, e.Name, cur.Spec.Principal, last.UTC().Format(time.RFC3339), at.Sub(last).Round(time.Second), at.UTC().Format(time.RFC3339))
			case cur.Spec.Phase == v1.CredentialActive && a.Status.Principal == cur.Spec.Principal:
				f.reissuePaced = fmt.Sprintf("Secret %s no longer holds the credential of principal %s (someone other than buckety changed or deleted it) and buckety issued it again at %s for the same reason: while the Secret keeps changing, it is issued again at most every %s, next at %s",
					a.Spec.CredentialsSecretName, cur.Spec.Principal, last.UTC().Format(time.RFC3339), at.Sub(last).Round(time.Second), at.UTC().Format(time.RFC3339))
			default:
				f.reissuePaced = fmt.Sprintf("buckety issued the credential of principal %s at %s and Secret %s does not hold it (its write did not succeed, or someone other than buckety changed it since): while it does not, the credential is issued again at most every %s, next at %s",
					cur.Spec.Principal, last.UTC().Format(time.RFC3339), a.Spec.CredentialsSecretName, at.Sub(last).Round(time.Second), at.UTC().Format(time.RFC3339))
			}
			f.wakeAt(at)
			if first {
				r.event(a, corev1.EventTypeWarning, v1.EventReissuePaced, v1.EventActionWriteSecret, f.reissuePaced)
			}
			return nil
		}
		f.reissued = true
	}
	switch {
	case cur.Spec.Phase == v1.CredentialMinting && cur.Spec.AccessGeneration == a.Generation:
		acc.Assert = max(acc.Assert, drivers.IssueNew)
	case drifted || edited || cur.Spec.Phase == v1.CredentialMinting || a.Generation != a.Status.ObservedGeneration:
		acc.Assert = max(acc.Assert, drivers.Reassert)
	}
	return nil
}

// settle runs once the Secret holds cur: cur becomes Active, every other
// credential of the access on that backend Retiring (revoked after the
// backend's rotationGrace), and status.rotation the value cur honours
// (unchanged while a rotation waits).
func (r *Reconciler) settle(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, on *grantedOn, cur *v1.BucketyCredential, secret string, f *facts) error {
	if err := r.activate(ctx, cur, SecretDigest(secret), roleOf(a), on); err != nil {
		return err
	}
	if !f.rotationDeferred {
		a.Status.Rotation = honoured(a, cur)
	}
	creds, err := r.credentials(ctx, a.UID)
	if err != nil {
		return err
	}
	after := metav1.NewTime(time.Now().Add(e.Config.RotationGrace()))
	for i := range creds {
		c := &creds[i]
		if c.Spec.Backend != e.Name || c.Name == cur.Name || c.Spec.Phase == v1.CredentialRetiring {
			continue
		}
		if on.withdrawnFrom(c) || widerThanItsAccess(c, a) {
			// Holds rights a Buckety withdrew, or a role its tenant
			// narrowed: revoked now, not after the grace.
			if _, err := r.revoke(ctx, c, f); err != nil {
				return err
			}
			continue
		}
		before := c.DeepCopy()
		c.Spec.Phase, c.Spec.RetireAfter = v1.CredentialRetiring, &after
		if err := r.Client.Patch(ctx, c, ctrl.MergeFromWithOptions(before, ctrl.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("retire credential %s: %w", c.Spec.Principal, err)
		}
		f.wakeAt(after.Time)
	}
	return nil
}

// honoured is the spec.rotation value credential cur was issued for, which
// a's status.rotation takes once the Secret holds it. A rotation asked
// for while cur was being issued (its record written at an earlier
// generation of the access, then a crash or a Secret write that failed
// before it was handed over) is not done by it: the next pass, finding
// status.rotation behind spec.rotation, issues the next credential. A
// record that names no rotation and was written at an earlier
// generation leaves status.rotation as it was (an earlier release wrote
// it, or spec.rotation was empty then): at worst one rotation more.
func honoured(a *v1.BucketyAccess, cur *v1.BucketyCredential) string {
	switch {
	case cur.Spec.AccessGeneration == a.Generation:
		return a.Spec.Rotation
	case cur.Spec.Rotation != "":
		return cur.Spec.Rotation
	}
	return a.Status.Rotation
}

// record creates the record of the access's credential serial, after
// checking that its principal does not exist yet (so it cannot be anyone
// else's). A record an earlier pass left (the cache has not seen it yet)
// is read live only when the principal exists or the create finds it:
// it is this access's when its owner UID says so. A new access costs one
// backend read and one create.
//
// Where the backend takes the secret buckety issues (drivers.SecretMaker),
// the secret is made first and the record is born Active with its
// digest: it is returned with the record, this pass asserts it and writes
// it to the Secret, and the record needs no second write. A crash before
// the Secret holds it leaves an Active record whose Secret holds no
// secret for its principal: the next pass issues a new one for the same
// principal (as for a Secret its tenant deleted), or the orphan sweep
// revokes it when the access is gone. Elsewhere (an IAM server issues the
// key) the record is born Minting, and activated once the Secret holds
// what Grant issued.
func (r *Reconciler) record(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, on *grantedOn, acc *drivers.Access, serial int, f *facts) (*v1.BucketyCredential, string, error) {
	named := *acc
	named.Installation = r.Backends.Installation()
	principal := e.Issuer.Principal(named, serial)
	service := e.Config.ClaimScope()
	c := &v1.BucketyCredential{
		ObjectMeta: metav1.ObjectMeta{Name: CredentialName(service, principal), Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID), shard.SlotLabel: shard.SlotValue(a.Namespace)}},
		Spec: v1.BucketyCredentialSpec{Backend: e.Name, Service: service, Principal: principal, Serial: int32(serial), Phase: v1.CredentialMinting,
			AccessGeneration: a.Generation, Rotation: a.Spec.Rotation, Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}, Role: roleOf(a)},
	}
	on.bind(c)
	made := ""
	if m, ok := e.Issuer.(drivers.SecretMaker); ok {
		s, err := m.NewSecret()
		if err != nil {
			return nil, "", fmt.Errorf("make a secret for %s: %w", principal, err)
		}
		if s != "" {
			made, c.Spec.Phase, c.Spec.SecretDigest = s, v1.CredentialActive, SecretDigest(s)
		}
	}
	earlier := func() (*v1.BucketyCredential, bool, error) {
		existing := &v1.BucketyCredential{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Name: c.Name}, existing)
		switch {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		case existing.Spec.Owner.UID != string(a.UID):
			f.principalConflict = fmt.Sprintf("principal %s on backend %s is recorded for another access; nothing was granted", principal, e.Name)
			return nil, true, nil
		}
		return existing, true, nil
	}
	exists, err := e.Issuer.InspectPrincipal(ctx, principal)
	if err != nil {
		f.Record(err)
		return nil, "", nil
	}
	if exists {
		if got, found, err := earlier(); found || err != nil {
			return got, "", err
		}
		f.principalConflict = fmt.Sprintf("principal %s already exists on backend %s and buckety did not create it: it is never altered or deleted, and nothing was granted (a maintainer may delete it, user or key, to let buckety issue it)", principal, e.Name)
		return nil, "", nil
	}
	if err := r.Client.Create(ctx, c); err != nil {
		if apierrors.IsAlreadyExists(err) {
			if got, found, err := earlier(); found || err != nil {
				return got, "", err
			}
		}
		return nil, "", fmt.Errorf("record credential %s: %w", principal, err)
	}
	acc.Assert = drivers.IssueRecorded
	r.unseen.createdRecord(types.NamespacedName{Namespace: a.Namespace, Name: a.Name}, a.UID, c.UID)
	return c, made, nil
}

// revokeCached revokes the access's credentials when the cache holds any
// (an access whose Buckety is gone is reconciled now and then: it costs
// no live read while it has none), or when this controller recorded one
// the cache does not show yet (unseenRecords).
func (r *Reconciler) revokeCached(ctx context.Context, a *v1.BucketyAccess, f *facts) error {
	creds, err := r.credentials(ctx, a.UID)
	if err != nil || (len(creds) == 0 && !r.unseen.creating(a.UID)) {
		return err
	}
	_, err = r.revokeAll(ctx, a, f)
	return err
}

// keepOwn handles an access on a backend whose config no longer asks for
// a credential per access (credentials removed by its maintainer): an
// access that holds a credential of its own keeps it, as it is, in its
// Secret (nothing rotates or repairs it, and it is revoked when the access
// goes), rather than being handed the backend's own credentials. It
// reports whether the access was kept so. An access whose Secret is gone
// has its credentials revoked, and is then granted as any new access; so
// has one whose credential was granted on another Buckety or claim.
func (r *Reconciler) keepOwn(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, on *grantedOn, f *facts) (bool, error) {
	creds, err := r.credentials(ctx, a.UID)
	if err != nil {
		return false, err
	}
	// The one the access's status names (what its Secret was last
	// written with), else the newest: a record born Active whose issue was
	// cut short is not what the Secret holds.
	named := func(c *v1.BucketyCredential) bool { return c.Spec.Principal == a.Status.Principal }
	var own *v1.BucketyCredential
	for i := range creds {
		c := &creds[i]
		if c.Spec.Backend != e.Name || c.Spec.Phase != v1.CredentialActive {
			continue
		}
		if own == nil || (named(c) && !named(own)) || (named(c) == named(own) && c.Spec.Serial > own.Spec.Serial) {
			own = c
		}
	}
	if own == nil {
		return false, nil
	}
	if !on.boundTo(own) {
		// Granted on another Buckety or claim (the Buckety was deleted
		// with its finalizer removed and made again, or the claim
		// changed hands): it holds nothing of this one, and is revoked.
		if _, err := r.revokeAll(ctx, a, f); err != nil {
			return false, err
		}
		return false, nil
	}
	// Revoked only on the API server's word that the Secret is not the
	// access's.
	m, err := r.ownSecretMeta(ctx, a, true)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	if err == nil && ownsSecret(a, m) {
		f.keptOwn = own.Spec.Principal
		if own.Spec.Role != "" && own.Spec.Role != roleOf(a) {
			f.keptRole = own.Spec.Role
		}
		f.synced, f.secretName = true, a.Spec.CredentialsSecretName
		// The Secret is this generation's of every Buckety: a Buckety
		// edited meanwhile finds its access caught up. status.withdrawn,
		// which lets a Buckety's deletion go on without the access,
		// gains nothing here: nothing took the kept credential's rights
		// on one that stopped sharing since away. giveUp's withdrawal
		// lists it once those are revoked (withdraw); until then only
		// those an earlier pass took away (a Drop written, a
		// withdrawal) stay listed.
		before := a.Status.Withdrawn
		on.written(a, e.Name)
		a.Status.Withdrawn = nil
		without, _ := on.without()
		for _, k := range without {
			if slices.Contains(before, k) {
				a.Status.Withdrawn = append(a.Status.Withdrawn, k)
			}
		}
		return true, nil
	}
	if _, err := r.revokeAll(ctx, a, f); err != nil {
		return false, err
	}
	return false, nil
}

// activate marks a Minting record Active once the Secret holds it, with
// the digest of the secret it holds (one patch, and none when neither
// changed).
func (r *Reconciler) activate(ctx context.Context, c *v1.BucketyCredential, digest string, role v1.Role, on *grantedOn) error {
	// The role it was just granted, recorded exactly (roleChanging
	// recorded one that covers it before the Grant).
	kept := roleKept(c, role)
	if c.Spec.Phase == v1.CredentialActive && c.Spec.SecretDigest == digest && kept && on.recorded(c) {
		return nil
	}
	before := c.DeepCopy()
	c.Spec.Phase, c.Spec.SecretDigest = v1.CredentialActive, digest
	if !kept {
		c.Spec.Role = role
	}
	// Bound to what it was just granted on: a record written before
	// credentials were bound, or one of several whose Bucketies stopped
	// sharing (its rights there were just dropped).
	on.bind(c)
	if err := r.Client.Patch(ctx, c, ctrl.MergeFromWithOptions(before, ctrl.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("activate credential %s: %w", c.Spec.Principal, err)
	}
	return nil
}

// widen records in c the resources the Grant of this pass is about to add
// (grantedOn.widen), before it adds them, and reports whether there are
// any: one write, only when an access over several gains a Buckety (one
// that starts sharing with it, or one made or provisioned since). Its
// rights there are then asserted, not trusted: a credential asserted
// before names no right on it.
func (r *Reconciler) widen(ctx context.Context, on *grantedOn, c *v1.BucketyCredential) (bool, error) {
	before := c.DeepCopy()
	if !on.widen(c) {
		return false, nil
	}
	if err := r.Client.Patch(ctx, c, ctrl.MergeFromWithOptions(before, ctrl.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("record the resources credential %s is about to be granted on: %w", c.Spec.Principal, err)
	}
	return true, nil
}

// secretOf returns the secret the access's Secret holds for principal ("":
// none), whether it was read afresh, and whether it was written under a
// setting the backend no longer issues with (drivers.StaleSecrets). The
// Secret's data is not cached:
// it is read when its resourceVersion differs from the one this
// controller last wrote or read (kept in memory, with the secret).
func (r *Reconciler) secretOf(ctx context.Context, a *v1.BucketyAccess, sc drivers.CredentialIssuer, principal string, issuing bool) (string, bool, bool, error) {
	key := types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName}
	m := secretMeta()
	err := r.Client.Get(ctx, key, m)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", false, false, err
	}
	if err != nil && issuing {
		// A credential still being issued is in no Secret anyone relies
		// on: a new access's Secret is not read live only to find it
		// missing. (Should the cache lag a Secret an interrupted issue
		// wrote, the issue finishes with a new password, as it would had
		// the Secret not been written.)
		return "", true, false, nil
	}
	if err == nil && ownsSecret(a, m) {
		if !r.secrets.has(a.UID) {
			r.prefetchSecrets(ctx, func() bool { return r.secrets.has(a.UID) }) // once after a start (prefetch.go)
		}
		if got, fresh, ok := r.secrets.get(a.UID, m.ResourceVersion, principal, sc); ok {
			return got, fresh, false, nil
		}
	}
	s := &corev1.Secret{}
	err = r.APIReader.Get(ctx, key, s)
	switch {
	case apierrors.IsNotFound(err):
		return "", true, false, nil
	case err != nil:
		return "", false, false, err
	case !ownsSecret(a, s):
		// Nothing is read from a Secret that is not this access's, and
		// nothing issued for it (secretToAssert ends the pass as a
		// conflict).
		return "", false, false, &foreignSecretError{secret: s}
	}
	secret := drivers.SecretOf(sc, principal, s.Data)
	if secret == "" {
		return "", true, false, nil
	}
	if drivers.SecretStale(sc, s.Data) {
		// Written under a setting the backend no longer issues with
		// (kadm: another SASL mechanism): the secret is asserted again
		// on the backend before the Secret names the new setting
		// (secretToAssert), and not kept, so a pass that fails before
		// writing it reads it again.
		return secret, true, true, nil
	}
	r.secrets.put(a.UID, s.ResourceVersion, principal, secret)
	return secret, true, false, nil
}

// foreignSecretError is secretOf's answer for a Secret of the access's
// name that is not the access's (ownsSecret): its labels or owner
// reference removed by its tenant or a GitOps sync, or another's.
type foreignSecretError struct{ secret *corev1.Secret }

func (e *foreignSecretError) Error() string {
	return fmt.Sprintf("Secret %s/%s is not the access's", e.secret.Namespace, e.secret.Name)
}

// maxKeptCredential bounds the principal and the secret knownSecrets
// keeps per access, whoever read them (a pass's GET, what it wrote, the
// start's prefetch). Buckety issues both under 100 bytes; a tenant can
// write up to 1 MiB into a Secret its access controls, and a value past
// this bound is not buckety's: it is not kept (the access's next pass
// reads its Secret afresh, as for a secret never seen), so the controller
// does not hold a tenant's megabyte for the life of the access.
const maxKeptCredential = 512

// knownSecrets remembers, per access, the secret its Secret held at a
// resourceVersion, so a pass over an untouched Secret reads nothing. It
// keeps nothing past maxKeptCredential.
type knownSecrets struct {
	mu sync.Mutex
	m  map[types.UID]knownSecret
}

type knownSecret struct {
	resourceVersion, principal, secret string
	// fresh marks a secret the start's prefetch read (prefetch.go): it
	// counts as read afresh, as the GET it saves would have (a password
	// edited while no controller ran is asserted), until a pass replaces
	// it with what it wrote or checked.
	fresh bool
	// staleFor are the issuers that find the Secret the prefetch read
	// written under settings they no longer issue with
	// (drivers.StaleSecrets): with two kadm backends of different
	// mechanisms, every Secret is one backend's and stale for the other,
	// and the Secret does not say which. An access of such a backend
	// reads its Secret on its own (secretOf), and is judged by it.
	staleFor []drivers.CredentialIssuer
}

// get returns the secret remembered for uid at rv and principal, and
// whether it counts as read afresh; none for an issuer sc the Secret is
// stale for (nil: any).
func (k *knownSecrets) get(uid types.UID, rv, principal string, sc drivers.CredentialIssuer) (secret string, fresh, ok bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	got, ok := k.m[uid]
	if !ok || rv == "" || got.resourceVersion != rv || got.principal != principal || sc != nil && slices.Contains(got.staleFor, sc) {
		return "", false, false
	}
	return got.secret, got.fresh, true
}

func (k *knownSecrets) has(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[uid]
	return ok
}

func (k *knownSecrets) put(uid types.UID, rv, principal, secret string) {
	k.store(uid, knownSecret{resourceVersion: rv, principal: principal, secret: secret}, true)
}

// putFresh records what the prefetch read, unless a pass recorded the
// access's secret meanwhile (from a newer resourceVersion).
func (k *knownSecrets) putFresh(uid types.UID, rv, principal, secret string, staleFor []drivers.CredentialIssuer) {
	k.store(uid, knownSecret{resourceVersion: rv, principal: principal, secret: secret, fresh: true, staleFor: staleFor}, false)
}

// store records s for uid, replacing what is there only when replace. A
// principal or secret past maxKeptCredential is not kept: with replace,
// what was kept of an earlier resourceVersion goes too.
func (k *knownSecrets) store(uid types.UID, s knownSecret, replace bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(s.principal) > maxKeptCredential || len(s.secret) > maxKeptCredential {
		if replace {
			delete(k.m, uid)
		}
		return
	}
	if k.m == nil {
		k.m = map[types.UID]knownSecret{}
	}
	if _, ok := k.m[uid]; ok && !replace {
		return
	}
	k.m[uid] = s
}

// prune drops the secrets of accesses that are not live: an access
// deleted with its finalizer removed by hand never passes through
// deletion's forget, and a create-then-strip loop must not grow memory.
func (k *knownSecrets) prune(live map[types.UID]bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	maps.DeleteFunc(k.m, func(uid types.UID, _ knownSecret) bool { return !live[uid] })
}

func (k *knownSecrets) forget(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, uid)
}

// revokeAll revokes every principal recorded for the access, then deletes
// the records. It reads the records from the API server: a record the
// cache has not seen yet must be revoked too. One that cannot be revoked
// now (its backend is missing from the config, or fails) stops none of
// the others: each is revoked as soon as its own backend allows, and the
// access keeps only what could not be. It reports whether every one was;
// the errors are joined.
func (r *Reconciler) revokeAll(ctx context.Context, a *v1.BucketyAccess, f *facts) (bool, error) {
	var list v1.BucketyCredentialList
	if err := r.APIReader.List(ctx, &list, ctrl.MatchingLabels{v1.ClaimOwnerLabel: string(a.UID)}); err != nil {
		return false, fmt.Errorf("list credentials: %w", err)
	}
	all := true
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		if c.Spec.Owner.UID != string(a.UID) {
			continue
		}
		if ctx.Err() != nil {
			return false, errors.Join(append(errs, ctx.Err())...)
		}
		done, err := r.revoke(ctx, c, f)
		if err != nil {
			errs = append(errs, err)
		}
		all = all && done
	}
	return all, errors.Join(errs...)
}

// revoke removes one recorded principal from its backend, then its record.
// A backend no longer in the config keeps the record (and the caller's
// finalizer): nothing is revoked blind.
func (r *Reconciler) revoke(ctx context.Context, c *v1.BucketyCredential, f *facts) (bool, error) {
	e, ok := r.Backends.Get(c.Spec.Backend)
	if !ok {
		if f != nil {
			f.revokeWaiting = fmt.Sprintf("credential %s is on backend %s, which is not in the controller config: it stays until the maintainer restores the backend or deletes the user and then BucketyCredential %s", c.Spec.Principal, c.Spec.Backend, c.Name)
		}
		return false, nil
	}
	acc := recordedOn(c)
	acc.Principal, acc.Namespace, acc.Name, acc.UID = c.Spec.Principal, c.Spec.Owner.Namespace, c.Spec.Owner.Name, c.Spec.Owner.UID
	if err := e.Backend.Revoke(ctx, acc); err != nil {
		if f != nil {
			f.Record(err)
		}
		return false, fmt.Errorf("revoke %s: %w", c.Spec.Principal, err)
	}
	if err := r.Client.Delete(ctx, c, ctrl.Preconditions{UID: &c.UID}); ctrl.IgnoreNotFound(err) != nil {
		return false, fmt.Errorf("delete credential record %s: %w", c.Name, err)
	}
	r.unseen.deletedRecord(types.UID(c.Spec.Owner.UID), c.UID)
	return true, nil
}

// SecretDigest is the hex SHA-256 of a principal's secret, as a
// BucketyCredential records it: enough to tell whether a Secret still
// holds what was asserted, nothing to authenticate with (the secret is
// 256 random bits).
func SecretDigest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// recordedOn is the Access naming the resources credential c records it
// was granted on: its Resource, and for an access naming several, each of
// its Resources (keyed by their Buckety, namespace_name).
func recordedOn(c *v1.BucketyCredential) drivers.Access {
	acc := drivers.Access{Resource: c.Spec.Resource}
	for _, cr := range c.Spec.Resources {
		acc.Several = append(acc.Several, drivers.AccessResource{Key: strings.Replace(cr.Buckety, "/", "_", 1), Name: cr.Resource})
	}
	return acc
}
