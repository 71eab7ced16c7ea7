package access

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// ConflictRetry is how soon a Secret conflict is checked again: the common
// case (implicit to explicit migration with the same Secret name) resolves
// as soon as the implicit access's Secret is gone.
const ConflictRetry = 3 * time.Second

// writeSecret creates or repairs the access's Secret. It reports a conflict
// when a Secret of that name exists that this access does not own.
//
// The cache holds only the metadata of Secrets labelled as buckety's (see
// the controller's cacheOptions), so a Secret missing from it may still
// exist (a foreign one, or this access's own, written moments ago and not
// yet seen). The create itself answers that: the API server refuses it
// when any Secret of that name exists, and only then is the Secret read
// fresh, to tell whose it is; but when this controller has written or
// checked a Secret for this access before, it is read fresh first (a
// read, where the create would be a refused write). A foreign Secret is
// never written to. While a conflict persists (it is retried every few
// seconds) the fresh read comes first, so a retry costs one read, not a
// refused create and a read.
//
// An existing Secret of this access is read fresh (its data is not cached)
// only when its resourceVersion differs from the one this controller last
// wrote or checked (verified): after an edit by hand, or once after a
// restart. A pass over a Secret nobody touched reads nothing. What it
// wrote or checked is also in the access's status, unless the Secret
// holds a credential of the access's own (status.secret: the
// Secret's UID and resourceVersion, and a digest of its data), written
// with the pass's status: after a restart, or on the replica that takes
// the shard over, a Secret still at that version, wanted with the same
// data, is verified without a read; one at another version (edited while
// no controller ran) is read on its own, and only an access whose status
// records no Secret (written by a release before status.secret) waits for
// the start-up read of every buckety Secret.
func (r *Reconciler) writeSecret(ctx context.Context, a *v1.BucketyAccess, data map[string][]byte, f *facts) (bool, error) {
	name := a.Spec.CredentialsSecretName
	f.secretName = name
	if f.ownCredential() {
		// A credential of the access's own may be a password its
		// tenant chose (and changed): its digest is not shown to those
		// who may read the access but not the Secret (the view role).
		a.Status.Secret = nil
	}
	key := types.NamespacedName{Namespace: a.Namespace, Name: name}
	m := secretMeta()
	err := r.Client.Get(ctx, key, m)
	if err == nil && ownsSecret(a, m) {
		switch {
		case r.verified.has(a.UID):
		case statusVouches(a, m, data):
			r.verified.record(a.UID, m.ResourceVersion, data)
		case a.Status.Secret == nil:
			// Written before status.secret was: read with every such
			// Secret of the shard, once after a start (prefetch.go).
			r.prefetchSecrets(ctx, func() bool { return r.verified.has(a.UID) })
		}
		if r.verified.matches(a.UID, m.ResourceVersion, data) {
			noteSecret(a, f, m, data)
			f.synced = true
			return false, nil
		}
	}
	s := &corev1.Secret{}
	switch {
	case apierrors.IsNotFound(err):
		// A Secret this controller already wrote or checked for this
		// access that the cache does not show is most likely one the
		// cache has not caught up with (the pass its own create woke):
		// read it rather than send a create the API server refuses.
		if !conflictReported(a) && !r.verified.has(a.UID) {
			created, cerr := r.createSecret(ctx, a, name, data)
			if cerr == nil {
				noteSecret(a, f, created, data)
				r.secretCreated(a, name, data)
				f.synced = true
				return false, nil
			}
			if !apierrors.IsAlreadyExists(cerr) {
				return false, fmt.Errorf("create Secret %s: %w", name, cerr)
			}
		}
		err = r.APIReader.Get(ctx, key, s)
	case err == nil:
		err = r.APIReader.Get(ctx, key, s)
	}
	switch {
	case apierrors.IsNotFound(err):
		// Gone since the refused create (or, after a conflict, the foreign
		// Secret was removed): create it now.
		created, err := r.createSecret(ctx, a, name, data)
		if err != nil {
			return false, fmt.Errorf("create Secret %s: %w", name, err)
		}
		noteSecret(a, f, created, data)
		r.secretCreated(a, name, data)
	case err != nil:
		return false, err
	case !ownsSecret(a, s):
		a.Status.Secret = nil
		f.secretConflict = conflictMessage(a, s)
		r.event(a, corev1.EventTypeWarning, v1.EventSecretConflict, v1.EventActionWriteSecret, f.secretConflict)
		return true, nil
	case !sameData(s.Data, data) || s.Type != corev1.SecretTypeOpaque:
		before := s.DeepCopy()
		s.Data = data
		// Under the resourceVersion read: a Secret deleted and created
		// again by someone else since (not buckety's, whatever its name)
		// refuses the patch, and the next pass reads whose it is.
		if err := r.Client.Patch(ctx, s, ctrl.MergeFromWithOptions(before, ctrl.MergeFromWithOptimisticLock{})); err != nil {
			return false, fmt.Errorf("repair Secret %s: %w", name, err)
		}
		r.verified.record(a.UID, s.ResourceVersion, data)
		noteSecret(a, f, s, data)
		r.event(a, corev1.EventTypeNormal, v1.EventSecretRepaired, v1.EventActionWriteSecret, fmt.Sprintf("Secret %s did not hold the expected keys; rewrote %v", name, keys(data)))
	default:
		r.verified.record(a.UID, s.ResourceVersion, data)
		noteSecret(a, f, s, data)
	}
	f.synced = true
	return false, nil
}

// noteSecret records in a's status the version of its Secret s (as
// written, read, or seen in the cache) that holds data, unless the status
// says so already, or the Secret holds a credential of the access's own
// (whose secret the start-up read brings anyway, secretOf).
func noteSecret(a *v1.BucketyAccess, f *facts, s metav1.Object, data map[string][]byte) {
	if f.ownCredential() || s.GetUID() == "" || s.GetResourceVersion() == "" || statusVouches(a, s, data) {
		return
	}
	a.Status.Secret = &v1.SecretVersion{UID: string(s.GetUID()), ResourceVersion: s.GetResourceVersion(), Digest: secretDigest(a.UID, data)}
}

// ownCredential: the pass granted the access a credential of its own.
func (f *facts) ownCredential() bool { return f.perAccess != nil && *f.perAccess }

// statusVouches reports whether a's status records its Secret at the
// version s has (the same UID and resourceVersion) holding data. A Secret
// edited since, deleted and created again, or wanted with other data now
// (the Buckety or the backend's configuration changed) does not match.
func statusVouches(a *v1.BucketyAccess, s metav1.Object, data map[string][]byte) bool {
	v := a.Status.Secret
	return v != nil && s.GetResourceVersion() != "" && v.UID == string(s.GetUID()) &&
		v.ResourceVersion == s.GetResourceVersion() && v.Digest == secretDigest(a.UID, data)
}

// secretDigest is status.secret.digest for data: a SHA-256 of the access's
// UID and the sum of data, so the same data of two accesses (a backend's
// shared keys) does not show as the same digest.
func secretDigest(uid types.UID, data map[string][]byte) string {
	sum := dataSum(data)
	h := sha256.New()
	h.Write([]byte(uid))
	h.Write([]byte{0})
	h.Write(sum[:])
	return hex.EncodeToString(h.Sum(nil))
}

// conflictMessage says that Secret s holds the access's credentialsSecretName
// and whose it is.
func conflictMessage(a *v1.BucketyAccess, s metav1.Object) string {
	owner := fmt.Sprintf("was not created by buckety for this access (no %s=%s label and owner reference)", v1.ManagedByLabel, v1.ManagedByValue)
	if l := s.GetLabels(); l[v1.ManagedByLabel] == v1.ManagedByValue && l[v1.AccessLabel] != a.Name && isAccessName(l[v1.AccessLabel]) {
		owner = fmt.Sprintf("belongs to BucketyAccess %s", l[v1.AccessLabel])
	}
	return fmt.Sprintf("Secret %s already exists and %s; it is never overwritten: delete or rename it, or choose another credentialsSecretName", s.GetName(), owner)
}

// conflictPersists, for an access on a backend that issues it a credential
// of its own and whose status reports a Secret conflict, reads the
// Secret's metadata fresh and reports whether a Secret the access does not
// own still holds the name. While one does, the pass ends there: no
// credential is issued or granted again. Otherwise each retry
// (every ConflictRetry, for as long as the conflict lasts) would write to
// the backend for a Secret it cannot write: a new SCRAM password, an IAM
// key deleted and created again, which a tenant could multiply by
// pointing many accesses at one Secret of their own.
func (r *Reconciler) conflictPersists(ctx context.Context, a *v1.BucketyAccess, f *facts) (bool, error) {
	if !conflictReported(a) {
		return false, nil
	}
	name := a.Spec.CredentialsSecretName
	m := secretMeta()
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: name}, m)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read Secret %s: %w", name, err)
	case ownsSecret(a, m):
		return false, nil
	}
	f.secretName = name
	f.secretConflict = conflictMessage(a, m)
	return true, nil
}

// secretTaken, before a credential is recorded and issued for the access
// (its first, or a rotation's next), reports whether a Secret the access
// does not own holds its credentialsSecretName, and if so ends the pass
// with the conflict writeSecret would report, having written nothing.
// Otherwise the pass would record the credential, create its principal
// and grant it on the backend, and only then find that it cannot write
// the Secret: a live credential that no Secret holds, one for each access
// a tenant points at a Secret of their own, for as long as the conflict
// lasts (conflictPersists only stops the issues after it is reported).
//
// The cache holds only buckety's Secrets: one it shows as the access's
// costs no read (a rotation of a settled access); any other answer is
// confirmed by a read of the metadata (ownSecretMeta), so a new access's
// first issue costs one GET. A pass of an access already reporting a
// conflict has just read the Secret (conflictPersists) and reads nothing
// more. A Secret created between this read and the Secret's write still
// makes the conflict writeSecret reports, after the issue: that
// credential then stays live, unwritten, until the conflict ends (the
// pass that finds the name free issues it again into the access's
// Secret) or the access is deleted (its records are revoked).
func (r *Reconciler) secretTaken(ctx context.Context, a *v1.BucketyAccess, f *facts) (bool, error) {
	if conflictReported(a) {
		return false, nil
	}
	m, err := r.ownSecretMeta(ctx, a, true)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read Secret %s: %w", a.Spec.CredentialsSecretName, err)
	case ownsSecret(a, m):
		return false, nil
	}
	a.Status.Secret = nil
	f.secretName = a.Spec.CredentialsSecretName
	f.secretConflict = conflictMessage(a, m)
	r.event(a, corev1.EventTypeWarning, v1.EventSecretConflict, v1.EventActionWriteSecret, f.secretConflict)
	return true, nil
}

// secretMeta is an empty Secret metadata object, for reading the cache.
func secretMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return m
}

// isAccessName reports whether a label value can name a BucketyAccess, so
// a conflict message quotes only a name, whatever a label holds.
func isAccessName(s string) bool {
	return s != "" && len(validation.IsDNS1123Subdomain(s)) == 0
}

// createSecret creates the access's Secret, labelled and owned by a.
func (r *Reconciler) createSecret(ctx context.Context, a *v1.BucketyAccess, name string, data map[string][]byte) (*corev1.Secret, error) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.Namespace, Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: a.Name, shard.SlotLabel: shard.SlotValue(a.Namespace)}},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := controllerutil.SetControllerReference(a, s, r.Client.Scheme()); err != nil {
		return nil, err
	}
	r.verified.creating(a.UID, true)
	defer r.verified.creating(a.UID, false)
	if err := r.Client.Create(ctx, s); err != nil {
		return nil, err
	}
	r.verified.record(a.UID, s.ResourceVersion, data)
	return s, nil
}

// ownsSecret reports whether s (a Secret, or its metadata) is this
// access's Secret: labelled by buckety for it, and controlled by it.
func ownsSecret(a *v1.BucketyAccess, s metav1.Object) bool {
	l := s.GetLabels()
	return l[v1.ManagedByLabel] == v1.ManagedByValue && l[v1.AccessLabel] == a.Name && metav1.IsControlledBy(s, a)
}

// verifiedSecrets remembers, per access, the resourceVersion of its Secret
// as this controller last wrote or read it and the data it then held, so a
// pass that finds the same resourceVersion and wants the same data needs no
// fresh read. Memory only, one entry per access (dropped when the access
// is deleted): after a restart each Secret is read once.
type verifiedSecrets struct {
	mu sync.Mutex
	m  map[types.UID]verified
	// inCreate holds the accesses whose Secret this controller is
	// creating (createSecret, from the request until its answer).
	inCreate map[types.UID]bool
}

type verified struct {
	resourceVersion string
	sum             [sha256.Size]byte
	// wanted: this controller wrote the Secret at resourceVersion, or
	// read it holding the data the access wants (record), not merely
	// listed it (recordIfAbsent).
	wanted bool
}

func dataSum(data map[string][]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, k := range keys(data) {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(data[k])
		h.Write([]byte{0})
	}
	var out [sha256.Size]byte
	copy(out[:], h.Sum(nil))
	return out
}

func (v *verifiedSecrets) record(uid types.UID, rv string, data map[string][]byte) {
	v.put(uid, rv, data, true)
}

// recordIfAbsent records what was read of uid's Secret unless something
// is recorded for it already (a write or read of this controller, newer
// than a list that started before it); it reports whether it recorded.
func (v *verifiedSecrets) recordIfAbsent(uid types.UID, rv string, data map[string][]byte) bool {
	return v.put(uid, rv, data, false)
}

func (v *verifiedSecrets) put(uid types.UID, rv string, data map[string][]byte, replace bool) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.m[uid]; ok && !replace {
		return false
	}
	if v.m == nil {
		v.m = map[types.UID]verified{}
	}
	v.m[uid] = verified{resourceVersion: rv, sum: dataSum(data), wanted: replace}
	return true
}

// creating notes that uid's Secret is being created (on) or no longer.
func (v *verifiedSecrets) creating(uid types.UID, on bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !on {
		delete(v.inCreate, uid)
		return
	}
	if v.inCreate == nil {
		v.inCreate = map[types.UID]bool{}
	}
	v.inCreate[uid] = true
}

// isCreating reports whether uid's Secret is being created.
func (v *verifiedSecrets) isCreating(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.inCreate[uid]
}

// wanted reports whether rv is the resourceVersion at which this
// controller last wrote uid's Secret, or read it holding the data the
// access wants.
func (v *verifiedSecrets) wanted(uid types.UID, rv string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	got, ok := v.m[uid]
	return ok && got.wanted && rv != "" && got.resourceVersion == rv
}

// ownSecretWrites is the predicate of the watch of the accesses' Secrets:
// it drops the events of a Secret at the resourceVersion this controller
// wrote it at, or verified it at (verifiedSecrets.wanted): they bring back
// what the access's last pass knew, and the pass they would wake finds
// nothing to do. So is the creation of an access's Secret while its pass
// creates it (the event can come before the create's answer): it is that
// create's, or another's that makes the create fail, which the pass then
// reads and handles itself. The initial list's events, deletions and every
// other version pass.
func (r *Reconciler) ownSecretWrites() predicate.Predicate {
	own := func(o ctrl.Object, created bool) bool {
		ref := metav1.GetControllerOfNoCopy(o)
		return ref != nil && (r.verified.wanted(ref.UID, o.GetResourceVersion()) || (created && r.verified.isCreating(ref.UID)))
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return e.IsInInitialList || !own(e.Object, true) },
		UpdateFunc: func(e event.UpdateEvent) bool { return !own(e.ObjectNew, false) },
	}
}

// has reports whether anything is recorded for uid's Secret.
func (v *verifiedSecrets) has(uid types.UID) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	_, ok := v.m[uid]
	return ok
}

func (v *verifiedSecrets) matches(uid types.UID, rv string, data map[string][]byte) bool {
	v.mu.Lock()
	got, ok := v.m[uid]
	v.mu.Unlock()
	return ok && rv != "" && got.resourceVersion == rv && got.sum == dataSum(data)
}

// resourceVersion is the Secret's resourceVersion as this controller last
// wrote or read it.
func (v *verifiedSecrets) resourceVersion(uid types.UID) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[uid].resourceVersion
}

// prune drops the entries of accesses that are not live (deleted with
// their finalizer removed by hand never pass through deletion's forget).
func (v *verifiedSecrets) prune(live map[types.UID]bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	maps.DeleteFunc(v.m, func(uid types.UID, _ verified) bool { return !live[uid] })
}

func (v *verifiedSecrets) forget(uid types.UID) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, uid)
}

// secretCreated reports a created Secret in an event, except the first
// Secret of an implicit access: its Buckety's event (Provisioned, or
// ImplicitAccessCreated) already named the access and the Secret it
// writes, and an event is an API write too.
func (r *Reconciler) secretCreated(a *v1.BucketyAccess, name string, data map[string][]byte) {
	if a.Labels[v1.ImplicitLabel] == "true" && a.Status.ObservedGeneration == 0 {
		return
	}
	r.event(a, corev1.EventTypeNormal, v1.EventSecretWritten, v1.EventActionWriteSecret, fmt.Sprintf("created Secret %s with keys %v", name, keys(data)))
}

// conflictReported reports whether a's status, as read, already reports a
// Secret conflict.
func conflictReported(a *v1.BucketyAccess) bool {
	c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
	// An access over several that gave up a withdrawn share while its
	// Secret was taken reports NotShared: the conflict is looked for again,
	// or each pass would issue a credential (the records gone with the
	// share), fail to write the Secret, and revoke it.
	return c != nil && (c.Reason == v1.ReasonSecretConflict || c.Reason == v1.ReasonNotShared && a.Several() && a.Status.Principal == "")
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
