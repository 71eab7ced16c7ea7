package access

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// TestWithdrawWaitingForItsBackendBacksOff: a withdrawal whose credential
// is on a backend no longer in the config (revokeWaiting) waits for the
// maintainer, which no pass can hasten: it is retried on the slow backoff,
// growing, not each second (each pass lists the access's credential
// records). A withdrawal that only waits for its cache is finished a
// second later, as before.
func TestWithdrawWaitingForItsBackendBacksOff(t *testing.T) {
	r := &Reconciler{Backoff: &retry.Backoff{}}
	uid := types.UID("a1")
	cache := &facts{}
	if got := r.withdrawAgain(cache); got.RequeueAfter != withdrawRetry {
		t.Errorf("waiting for the cache: want a retry after %s, got %s", withdrawRetry, got.RequeueAfter)
	}
	if failure(cache) != retry.None {
		t.Errorf("waiting for the cache: want no failure, got %v", failure(cache))
	}
	waiting := &facts{revokeWaiting: "credential p1 is on backend gone, which is not in the controller config"}
	var last time.Duration
	for i := 0; i < 3; i++ {
		res := r.Backoff.Retry(uid, failure(waiting), r.withdrawAgain(waiting))
		if res.RequeueAfter < retry.PermanentBase || res.RequeueAfter <= last {
			t.Fatalf("pass %d waiting for its backend: want a growing retry of at least %s, got %s after %s", i+1, retry.PermanentBase, res.RequeueAfter, last)
		}
		last = res.RequeueAfter
	}
}

// TestRevokeAllRevokesWhatItCan: an access holds a credential on a
// backend no longer in the config (its record listed first) and one on a
// real broker. Revoking all of them (a deletion, a withdrawal) revokes the
// broker's user and deletes its record at once, and keeps only the record
// nothing can revoke (revokeWaiting), reporting the whole not done. Before,
// the first record that could not be revoked stopped the walk: the
// broker's user kept working for as long as the maintainer took.
func TestRevokeAllRevokesWhatItCan(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	f := newRecordedAccess(t, true)
	ctx := context.Background()
	stranded := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: "0-stranded", UID: "uid-stranded",
		Labels: map[string]string{v1.ClaimOwnerLabel: string(f.a.UID)}},
		Spec: v1.BucketyCredentialSpec{Backend: "gone", Service: "gone", Principal: "bky.t.multi.0", Serial: 1, Phase: v1.CredentialRetiring,
			Owner: v1.ClaimOwner{Namespace: f.a.Namespace, Name: f.a.Name, UID: string(f.a.UID)}}}
	for _, c := range []client.Client{f.api, f.cache} {
		if err := c.Create(ctx, stranded.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	var fs facts
	done, err := f.r.revokeAll(ctx, f.a, &fs)
	if err != nil {
		t.Fatal(err)
	}
	if done || fs.revokeWaiting == "" {
		t.Errorf("a credential on a backend missing from the config: want not done and revokeWaiting, got done %v, %q", done, fs.revokeWaiting)
	}
	if scramUsers(t, f.adm)[f.principal] {
		t.Errorf("want user %s revoked on the broker although an earlier record could not be", f.principal)
	}
	if err := f.api.Get(ctx, client.ObjectKeyFromObject(f.rec), &v1.BucketyCredential{}); !apierrors.IsNotFound(err) {
		t.Errorf("want the broker credential's record deleted, got %v", err)
	}
	if err := f.api.Get(ctx, client.ObjectKeyFromObject(stranded), &v1.BucketyCredential{}); err != nil {
		t.Errorf("want the record nothing can revoke kept for the maintainer, got %v", err)
	}
}

// TestConsentOfANamespaceBeingDeletedSaysNoMore: the namespace of a
// Buckety being deleted is going. An access its rules never let in reads
// the refusal every other does (the Buckety "does not exist or does not
// share"), not that this namespace is being deleted, which told a tenant
// of another namespace's Bucketies from names it made up; an access they
// let in is told why it loses its rights.
func TestConsentOfANamespaceBeingDeletedSaysNoMore(t *testing.T) {
	now := metav1.Now()
	owner := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "owner", DeletionTimestamp: &now, Finalizers: []string{"test.example/hold"}}}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "owner", Name: "orders", DeletionTimestamp: &now, Finalizers: []string{v1.Finalizer}},
		Spec: v1.BucketySpec{Backend: "kafka", Sharing: []v1.SharingRule{{Namespace: "consumer", Roles: []v1.Role{v1.RoleReadOnly}}}}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(owner).Build()}
	for _, tc := range []struct {
		ns, want string
	}{
		{"consumer", "is being deleted"},
		{"stranger", "does not exist or does not share"},
	} {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: "reader"}, Spec: v1.BucketyAccessSpec{Role: v1.RoleReadOnly}}
		got, err := r.consent(context.Background(), a, b)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("an access of namespace %s: want %q in the refusal, got %q", tc.ns, tc.want, got)
		}
	}
}
