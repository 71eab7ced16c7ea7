package access

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/twmb/franz-go/pkg/kadm"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// laggingCache is a manager's client whose cache lags the API server: it
// reads from cache and writes to the API server (the embedded Client).
type laggingCache struct {
	client.Client
	cache client.Client
}

func (l laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return l.cache.Get(ctx, key, obj, opts...)
}

func (l laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return l.cache.List(ctx, list, opts...)
}

// recordedAccess is access t/multi with credential bky.t.multi.1: a SCRAM
// user on a real broker and its record in the API server, and a
// reconciler whose cache lags the API server (laggingCache).
type recordedAccess struct {
	adm        *kadm.Client
	a          *v1.BucketyAccess
	rec        *v1.BucketyCredential
	principal  string
	cache, api client.Client
	r          *Reconciler
}

// newRecordedAccess builds a recordedAccess; cached: the cache shows the
// record too.
func newRecordedAccess(t *testing.T, cached bool) recordedAccess {
	t.Helper()
	set, b, _ := kafkaPair(t, "test-inst", time.Hour, 5*time.Second)
	f := recordedAccess{adm: scramAdmin(t, b), principal: "bky.t.multi.1"}
	f.a = &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "multi", UID: types.UID("uid-multi")},
		Spec: v1.BucketyAccessSpec{CredentialsSecretName: "multi"}, Status: v1.BucketyAccessStatus{Principal: f.principal}}
	upsertSCRAM(t, f.adm, f.principal)
	f.rec = &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("kafka", f.principal), UID: "uid-record",
		Labels: map[string]string{v1.ClaimOwnerLabel: string(f.a.UID)}},
		Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: f.principal, Serial: 1, Phase: v1.CredentialActive,
			Owner: v1.ClaimOwner{Namespace: f.a.Namespace, Name: f.a.Name, UID: string(f.a.UID)}}}
	var inCache []client.Object
	if cached {
		inCache = append(inCache, f.rec.DeepCopy())
	}
	f.cache, f.api = credentialClient(t, inCache...), credentialClient(t, f.rec.DeepCopy())
	f.r = &Reconciler{Client: laggingCache{Client: f.api, cache: f.cache}, APIReader: f.api, Backends: set}
	return f
}

// credentialClient is a fake client holding objs, with the credential
// records indexed by their access as the manager's cache indexes them.
func credentialClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	byOwner := func(o client.Object) []string { return []string{o.GetLabels()[v1.ClaimOwnerLabel]} }
	byOwnerName := func(o client.Object) []string {
		owner := o.(*v1.BucketyCredential).Spec.Owner
		return []string{objects.RefKey(owner.Namespace, owner.Name)}
	}
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwner, byOwner).
		WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwnerName, byOwnerName).WithObjects(objs...).Build()
}

// TestRevokedRecordIsNotTakenFromALaggingCache: an access withdrawn (the
// Buckety of another namespace it was granted on stopped sharing) has its
// credential revoked, on a real broker: the user goes, then its record.
// The cache still shows the record. The withdrawal finishes in that pass
// all the same, and no later pass takes the record for the access's
// current credential: one that did granted it again, which made the
// deleted user again with no record, and the access's next credential,
// issued under the same name, then met "a principal buckety did not
// create" for good (TestSeveralWithdrawnWhileStuck, on a loaded CI
// machine). Once the cache shows the deletion, nothing is remembered.
func TestRevokedRecordIsNotTakenFromALaggingCache(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	f := newRecordedAccess(t, true)
	adm, a, rec, principal, cache, api, r := f.adm, f.a, f.rec, f.principal, f.cache, f.api, f.r
	ctx := context.Background()

	done, err := r.withdraw(ctx, a, &facts{})
	if err != nil {
		t.Fatal(err)
	}
	if scramUsers(t, adm)[principal] {
		t.Fatalf("withdrawn: want user %s deleted from the broker", principal)
	}
	if err := api.Get(ctx, client.ObjectKeyFromObject(rec), &v1.BucketyCredential{}); err == nil {
		t.Fatal("withdrawn: want the record deleted from the API server")
	}
	if !done || a.Status.Principal != "" {
		t.Errorf("the record deleted, the cache still showing it: want the withdrawal finished in this pass, got done %v, status.principal %q", done, a.Status.Principal)
	}
	creds, err := r.credentials(ctx, a.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(creds) != 0 {
		t.Fatalf("the cache still shows the revoked record: want no credential for the next pass to grant again, got %s", creds[0].Spec.Principal)
	}

	// The cache catches up: the deletion is forgotten.
	if err := cache.Delete(ctx, rec.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.credentials(ctx, a.UID); err != nil {
		t.Fatal(err)
	}
	if n := len(r.unseen.deleted); n != 0 {
		t.Errorf("the cache shows the deletion: want nothing remembered, got the records of %d accesses", n)
	}
}

// TestUnseenRecordsPruned: what is remembered for an access that is gone
// is dropped by the prune (nothing lists its records again), what is
// remembered for a live one kept.
func TestUnseenRecordsPruned(t *testing.T) {
	var u unseenRecords
	u.deletedRecord("gone", "r1")
	u.createdRecord(types.NamespacedName{Namespace: "t", Name: "gone"}, "gone", "r2")
	u.deletedRecord("live", "r3")
	u.createdRecord(types.NamespacedName{Namespace: "t", Name: "live"}, "live", "r4")
	u.prune(map[types.UID]bool{"live": true})
	if u.deleted["gone"] != nil || u.created["gone"] != nil {
		t.Error("want what was remembered of a gone access forgotten")
	}
	if !u.deleted["live"]["r3"] || !u.creating("live") {
		t.Error("want what was remembered of a live access kept")
	}
	if got := u.creatingAt(types.NamespacedName{Namespace: "t", Name: "live"}); len(got) != 1 || got[0] != "live" {
		t.Errorf("creatingAt t/live: want [live], got %v", got)
	}
	if got := u.creatingAt(types.NamespacedName{Namespace: "t", Name: "gone"}); len(got) != 0 || len(u.keys) != 1 {
		t.Errorf("creatingAt t/gone, pruned: want nothing and one key left, got %v and %d keys", got, len(u.keys))
	}
	// The cache shows the created record: nothing is pending any more.
	u.filter("live", []v1.BucketyCredential{{ObjectMeta: metav1.ObjectMeta{UID: "r4"}}})
	if u.creating("live") {
		t.Error("the cache shows the created record: want it forgotten")
	}
}

// TestWithdrawnBeforeTheRecordIsCached: a pass records the access's
// credential and grants it; then the access is withdrawn (in the same
// pass: an access over several whose Secret its tenant took, as a Buckety
// stops sharing; or in the next, its Buckety gone or another
// installation's) while the cache does not show the record yet. The
// withdrawal reads the records from the API server and revokes it, rather
// than leave the user and its record to a later pass.
func TestWithdrawnBeforeTheRecordIsCached(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	f := newRecordedAccess(t, false)
	adm, a, rec, principal, api, r := f.adm, f.a, f.rec, f.principal, f.api, f.r
	r.unseen.createdRecord(types.NamespacedName{Namespace: a.Namespace, Name: a.Name}, a.UID, rec.UID)
	done, err := r.withdraw(context.Background(), a, &facts{})
	if err != nil || !done {
		t.Fatalf("want the withdrawal finished, got done %v, %v", done, err)
	}
	if scramUsers(t, adm)[principal] {
		t.Errorf("recorded, not yet cached: want user %s revoked with the access's withdrawal", principal)
	}
	if err := api.Get(context.Background(), client.ObjectKeyFromObject(rec), &v1.BucketyCredential{}); err == nil {
		t.Error("want the record of the revoked user deleted")
	}
}

// TestRotatedRecordNotYetCached: a rotation recorded P2, wrote it to the
// Secret and the status, and retired P1. The next pass comes before the
// cache shows any of that but the status: it still shows P1 as the
// Active record. Taking P1 for the current credential would give it a new
// password (the Secret holds none for it), ending its grace at once, and
// write it back to the Secret over P2. The pass waits for its cache
// instead, since the API server holds the record of P2.
func TestRotatedRecordNotYetCached(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	set, _, _ := kafkaPair(t, "test-inst", time.Hour, 5*time.Second)
	e, _ := set.Get("kafka")
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "app", UID: types.UID("uid-app"), Generation: 2},
		Spec:   v1.BucketyAccessSpec{CredentialsSecretName: "app", Rotation: "1"},
		Status: v1.BucketyAccessStatus{Principal: "bky.t.app.2", Rotation: "1", ObservedGeneration: 2}}
	rec := func(p string, serial int32, phase v1.CredentialPhase) *v1.BucketyCredential {
		return &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("kafka", p), UID: types.UID("uid-" + p),
			Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
			Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: p, Serial: serial, Phase: phase,
				Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
	}
	cache := credentialClient(t, rec("bky.t.app.1", 1, v1.CredentialActive))
	api := credentialClient(t, rec("bky.t.app.1", 1, v1.CredentialRetiring), rec("bky.t.app.2", 2, v1.CredentialActive))
	r := &Reconciler{Client: laggingCache{Client: api, cache: cache}, APIReader: api, Backends: set}
	f := &facts{}
	cred, err := r.credential(context.Background(), a, e, single(&v1.Buckety{}), &drivers.Access{}, f)
	if err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		t.Fatalf("the cache shows P1 Active, the status names P2: want the pass to wait for its cache, got %s taken for the current credential", cred.Spec.Principal)
	}
	if f.recordsPending == "" {
		t.Error("want the access to say it waits for its cache")
	}

	// Once the cache shows P2, it is the current credential.
	if err := cache.Create(context.Background(), rec("bky.t.app.2", 2, v1.CredentialActive)); err != nil {
		t.Fatal(err)
	}
	f = &facts{}
	cred, err = r.credential(context.Background(), a, e, single(&v1.Buckety{}), &drivers.Access{}, f)
	if err != nil {
		t.Fatal(err)
	}
	if cred == nil || cred.Spec.Principal != "bky.t.app.2" || f.recordsPending != "" {
		t.Errorf("the cache shows P2: want it current and nothing pending, got %v, pending %q", cred, f.recordsPending)
	}

	// P2's record gone from the API server too (deleted by hand): nothing
	// to wait for, though P1's record is there.
	both := credentialClient(t, rec("bky.t.app.1", 1, v1.CredentialActive))
	r = &Reconciler{Client: both, APIReader: both, Backends: set}
	f = &facts{}
	if _, err := r.credential(context.Background(), a, e, single(&v1.Buckety{}), &drivers.Access{}, f); err != nil {
		t.Fatal(err)
	}
	if f.recordsPending != "" {
		t.Errorf("no record of P2 anywhere: want nothing to wait for, got %q", f.recordsPending)
	}
}

// TestOrphanCheckRevokesOnlyTheRecordItRead: the orphan check's list (its
// cache) still shows a record deleted since, bound to a Buckety that is
// gone; the access was granted again since, and the same principal (its
// serial started again at 1) stands recorded anew in the API server. The
// check must not revoke the working credential on the old record's word.
func TestOrphanCheckRevokesOnlyTheRecordItRead(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	set, b, _ := kafkaPair(t, "test-inst", time.Hour, 5*time.Second)
	adm := scramAdmin(t, b)
	const principal = "bky.t.app.1"
	upsertSCRAM(t, adm, principal)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "app", UID: "uid-app"},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}}
	orders := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "orders", UID: "uid-orders-2"}}
	claim := &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-orders"}, Spec: v1.BucketyClaimSpec{Owner: v1.ClaimOwner{Namespace: "t", Name: "orders", UID: "uid-orders-2"}}}
	rec := func(uid types.UID, bucketyUID string) *v1.BucketyCredential {
		return &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("kafka", principal), UID: uid,
			Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
			Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: principal, Serial: 1, Phase: v1.CredentialActive,
				BucketyUID: bucketyUID, Claim: "claim-orders", Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
	}
	s := testScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(a.DeepCopy(), orders.DeepCopy(), claim.DeepCopy(), rec("uid-old-record", "uid-orders-1")).Build()
	api := fake.NewClientBuilder().WithScheme(s).WithObjects(a.DeepCopy(), orders.DeepCopy(), claim.DeepCopy(), rec("uid-new-record", "uid-orders-2")).Build()
	o := &Orphans{Reconciler: &Reconciler{Client: cache, APIReader: api, Backends: set}, Log: logr.Discard()}
	if _, err := o.CheckBackend(context.Background(), "kafka"); err != nil {
		t.Fatal(err)
	}
	if !scramUsers(t, adm)[principal] {
		t.Errorf("user %s, recorded anew for a live access, was revoked on a deleted record's word", principal)
	}
	if err := api.Get(context.Background(), client.ObjectKey{Name: CredentialName("kafka", principal)}, &v1.BucketyCredential{}); err != nil {
		t.Errorf("want the new record kept, got %v", err)
	}
}

// TestLeftBeforeTheRecordIsCached: an access deleted with its finalizer
// stripped during its first issue, before the cache shows the record of
// the credential just issued. The pass that finds it gone reads the
// record from the API server and revokes the user, rather than leave it
// working until the orphan check.
func TestLeftBeforeTheRecordIsCached(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	f := newRecordedAccess(t, false)
	adm, a, rec, principal, api, r := f.adm, f.a, f.rec, f.principal, f.api, f.r
	key := types.NamespacedName{Namespace: a.Namespace, Name: a.Name}
	r.unseen.createdRecord(key, a.UID, rec.UID)
	if !scramUsers(t, adm)[principal] {
		t.Fatalf("want user %s on the broker before", principal)
	}
	if err := r.revokeLeft(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if scramUsers(t, adm)[principal] {
		t.Errorf("recorded, not yet cached, its access gone: want user %s revoked", principal)
	}
	if err := api.Get(context.Background(), client.ObjectKeyFromObject(rec), &v1.BucketyCredential{}); err == nil {
		t.Error("want the record of the revoked user deleted")
	}
	if got := r.unseen.creatingAt(key); len(got) != 0 {
		t.Errorf("revoked: want nothing pending for %s, got %v", key, got)
	}
}
