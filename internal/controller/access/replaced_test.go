package access

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends/backendstest"
)

// TestReplacedBucketyIsTakenForMissing: a single-Buckety access whose
// status names the UID of the Buckety its credentials were granted on,
// while the Buckety of that name now is another (deleted with its
// finalizer stripped and applied again, the gap unseen), which cannot be
// granted on yet. The pass takes it as it takes a missing Buckety (its
// credentials revoked at once: reconcile's bucketyReplaced), not as a
// Buckety to wait for. The same Buckety not provisioned yet, or an access
// granted nothing so far, waits as before.
func TestReplacedBucketyIsTakenForMissing(t *testing.T) {
	set := backendstest.Open(t, "backends:\n- {name: kafka, driver: kadm, config: {seedBrokers: ['127.0.0.1:1']}}\n")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "events", UID: "uid-new"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(b).Build(), Backends: set}
	for _, c := range []struct {
		name, granted string
		replaced      bool
	}{
		{"granted on the Buckety deleted since", "uid-old", true},
		{"granted on this Buckety", "uid-new", false},
		{"granted nothing yet", "", false},
	} {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "app", UID: "uid-app"},
			Spec:   v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "events"}, CredentialsSecretName: "app"},
			Status: v1.BucketyAccessStatus{BucketyUID: types.UID(c.granted)}}
		f := &facts{}
		_, _, ok, err := r.resolve(context.Background(), a, f)
		if err != nil || ok {
			t.Fatalf("%s: want the pass to wait for the Buckety to provision, got ok %v, %v", c.name, ok, err)
		}
		if f.bucketyReplaced != c.replaced || f.bucketyWaiting == "" {
			t.Errorf("%s: bucketyReplaced = %v, want %v (waiting: %q)", c.name, f.bucketyReplaced, c.replaced, f.bucketyWaiting)
		}
		if said := strings.Contains(f.bucketyWaiting, "so those were revoked"); said != c.replaced {
			t.Errorf("%s: the status says the credentials were revoked: %v, want %v (%q)", c.name, said, c.replaced, f.bucketyWaiting)
		}
	}
}
