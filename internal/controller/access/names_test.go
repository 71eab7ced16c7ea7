package access

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
)

// TestNameTooLongIssuesNothing: an access whose name cannot label its
// Secret (admitted before the webhook checked it, or without the webhook)
// has its Buckety looked up (one that does not share with it withdraws it,
// TestLongNamedForeignAccessHoldsNoDeletionBack) and stops there: nothing
// is granted or issued, no Secret is written, the credential an earlier
// pass issued it is revoked, and Ready says why, naming metadata.name. One
// of 63 characters goes on to its Buckety's backend.
func TestNameTooLongIssuesNothing(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{63, 64} {
		r, _ := limitsEnv(t, 0)
		set, err := backends.Open(ctx, &config.Config{})
		if err != nil {
			t.Fatal(err)
		}
		r.Backends = set
		a := mkAccess(t, r.Client, "n"+strings.Repeat("a", n-1), time.Now())
		// Recorded by an earlier pass on backend svc, which is not in
		// the config here: its revocation waits, and says so.
		rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName("svc", "p1"), Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
			Spec: v1.BucketyCredentialSpec{Backend: "svc", Service: "svc", Principal: "p1", Phase: v1.CredentialMinting,
				Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
		if err := r.Client.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		f := &facts{}
		if _, err := r.reconcileLive(ctx, a, f); err != nil {
			t.Fatalf("%d characters: %v", n, err)
		}
		ready := find(conditions(a, f), v1.ConditionReady)
		if n == 63 {
			if f.nameTooLong != "" || f.problem == nil || ready.Reason != v1.ReasonBackendNotConfigured {
				t.Errorf("63 characters: want the pass on to the Buckety's backend (not configured here), got name %q, Ready %s: %s", f.nameTooLong, ready.Reason, ready.Message)
			}
			continue
		}
		const want = "metadata.name is 64 characters, more than the 63 a label value holds: buckety labels the access's Secret with the access's name (buckety.yolean.se/access): no Secret can be written for it, so nothing is granted"
		if ready.Status != metav1.ConditionFalse || ready.Reason != v1.ReasonInvalidAccess || !strings.Contains(ready.Message, want) {
			t.Errorf("64 characters: want Ready=False (%s) saying %q, got %s (%s: %s)", v1.ReasonInvalidAccess, want, ready.Status, ready.Reason, ready.Message)
		}
		if f.perAccess != nil || f.synced {
			t.Errorf("64 characters: want nothing granted, got perAccess %v, synced %v", f.perAccess, f.synced)
		}
		if !strings.Contains(f.revokeWaiting, "credential p1 is on backend svc") {
			t.Errorf("64 characters: want the recorded credential's revocation tried, got %q", f.revokeWaiting)
		}
		var secrets corev1.SecretList
		if err := r.Client.List(ctx, &secrets); err != nil {
			t.Fatal(err)
		}
		if len(secrets.Items) != 0 {
			t.Errorf("64 characters: want no Secret written, got %d", len(secrets.Items))
		}
	}
}
