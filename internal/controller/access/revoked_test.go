package access

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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
	const installation = "test-inst"
	set, b, _ := kafkaPair(t, installation, time.Hour, 5*time.Second)
	adm := scramAdmin(t, b)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "multi", UID: types.UID("uid-multi")},
		Spec: v1.BucketyAccessSpec{CredentialsSecretName: "multi"}, Status: v1.BucketyAccessStatus{Principal: "bky.t.multi.1"}}
	principal := a.Status.Principal
	upsertSCRAM(t, adm, principal)
	rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("kafka", principal), UID: "uid-record",
		Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
		Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: principal, Serial: 1, Phase: v1.CredentialActive,
			Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
	byOwner := func(o client.Object) []string { return []string{o.GetLabels()[v1.ClaimOwnerLabel]} }
	s := testScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwner, byOwner).WithObjects(rec.DeepCopy()).Build()
	api := fake.NewClientBuilder().WithScheme(s).WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwner, byOwner).WithObjects(rec.DeepCopy()).Build()
	r := &Reconciler{Client: laggingCache{Client: api, cache: cache}, APIReader: api, Backends: set}
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
	if n := len(r.revoked.m); n != 0 {
		t.Errorf("the cache shows the deletion: want nothing remembered, got the records of %d accesses", n)
	}
}

// TestRevokedRecordsPruned: the deletions remembered for an access that is
// gone are dropped by the prune (nothing lists its records again), those
// of live accesses kept.
func TestRevokedRecordsPruned(t *testing.T) {
	var r revokedRecords
	r.add("gone", "r1")
	r.add("live", "r2")
	r.prune(map[types.UID]bool{"live": true})
	if _, ok := r.m["gone"]; ok {
		t.Error("want the deletions of a gone access forgotten")
	}
	if !r.m["live"]["r2"] {
		t.Error("want the deletions of a live access kept")
	}
}

// TestWithdrawnInThePassThatRecorded: a pass records the access's
// credential and grants it, then cannot write the Secret and withdraws
// the access (an access over several whose Secret its tenant took, as a
// Buckety stops sharing). The cache does not show the record yet; the
// withdrawal reads the records from the API server and revokes it, rather
// than leave the user and its record to a later pass.
func TestWithdrawnInThePassThatRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	set, b, _ := kafkaPair(t, "test-inst", time.Hour, 5*time.Second)
	adm := scramAdmin(t, b)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "multi", UID: types.UID("uid-multi")},
		Spec: v1.BucketyAccessSpec{CredentialsSecretName: "multi"}, Status: v1.BucketyAccessStatus{Principal: "bky.t.multi.1"}}
	principal := a.Status.Principal
	upsertSCRAM(t, adm, principal)
	rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("kafka", principal), UID: "uid-record",
		Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
		Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: principal, Serial: 1, Phase: v1.CredentialActive,
			Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
	byOwner := func(o client.Object) []string { return []string{o.GetLabels()[v1.ClaimOwnerLabel]} }
	s := testScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwner, byOwner).Build()
	api := fake.NewClientBuilder().WithScheme(s).WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwner, byOwner).WithObjects(rec.DeepCopy()).Build()
	r := &Reconciler{Client: laggingCache{Client: api, cache: cache}, APIReader: api, Backends: set}
	done, err := r.withdraw(context.Background(), a, &facts{recorded: true})
	if err != nil || !done {
		t.Fatalf("want the withdrawal finished, got done %v, %v", done, err)
	}
	if scramUsers(t, adm)[principal] {
		t.Errorf("recorded in this pass, not yet cached: want user %s revoked with the access's withdrawal", principal)
	}
	if err := api.Get(context.Background(), client.ObjectKeyFromObject(rec), &v1.BucketyCredential{}); err == nil {
		t.Error("want the record of the revoked user deleted")
	}
}
