package access

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends/backendstest"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
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

// TestReplacedBucketyOfSeveralIsTakenForMissing: the same for an access
// naming several Bucketies, whose credential records say which Buckety
// each resource was granted on. One of them deleted and applied again
// under its name, not provisioned yet, revokes the one credential at
// once, not only at the orphan check a minute later: the credential
// would reach the old Buckety's retained resource meanwhile. A record of
// an older release names the first Buckety's UID alone.
func TestReplacedBucketyOfSeveralIsTakenForMissing(t *testing.T) {
	set := backendstest.Open(t, "backends:\n- {name: kafka, driver: kadm, config: {seedBrokers: ['127.0.0.1:1']}}\n")
	events := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "events", UID: "uid-new"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	audit := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "audit", UID: "uid-audit"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	// x shares with no one (any more): the access is withdrawn from it,
	// its rights on x alone taken away.
	x := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "x", UID: "uid-x-new"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	for _, c := range []struct {
		name      string
		refs      []string
		resources []v1.CredentialResource
		legacyUID string
		replaced  bool
	}{
		{"granted on the Buckety deleted since", []string{"audit", "events"}, []v1.CredentialResource{
			{Resource: "audit", Buckety: "t/audit", BucketyUID: "uid-audit", Claim: "c1"},
			{Resource: "events", Buckety: "t/events", BucketyUID: "uid-old", Claim: "c2"}}, "", true},
		{"granted on these Bucketies", []string{"audit", "events"}, []v1.CredentialResource{
			{Resource: "audit", Buckety: "t/audit", BucketyUID: "uid-audit", Claim: "c1"},
			{Resource: "events", Buckety: "t/events", BucketyUID: "uid-new", Claim: "c2"}}, "", false},
		{"granted nothing yet", []string{"audit", "events"}, nil, "", false},
		{"an older release's record, the first Buckety deleted since", []string{"events", "audit"}, nil, "uid-old", true},
		{"an older release's record, another first Buckety", []string{"audit", "events"}, nil, "uid-audit", false},
		{"another namespace's Buckety replaced and no longer shared", []string{"audit", "o/x"}, []v1.CredentialResource{
			{Resource: "audit", Buckety: "t/audit", BucketyUID: "uid-audit", Claim: "c1"},
			{Resource: "x", Buckety: "o/x", BucketyUID: "uid-x-old", Claim: "c3"}}, "", false},
	} {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "app", UID: "uid-app"},
			Spec: v1.BucketyAccessSpec{CredentialsSecretName: "app"}}
		for _, n := range c.refs {
			ref := v1.BucketyReference{Name: n}
			if ns, name, ok := strings.Cut(n, "/"); ok {
				ref = v1.BucketyReference{Namespace: ns, Name: name}
			}
			a.Spec.BucketyRefs = append(a.Spec.BucketyRefs, ref)
		}
		objs := []client.Object{events.DeepCopy(), audit.DeepCopy(), x.DeepCopy()}
		if c.resources != nil || c.legacyUID != "" {
			uid := c.legacyUID
			if uid == "" {
				uid = c.resources[0].BucketyUID
			}
			objs = append(objs, &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: "bkycred-app", Labels: map[string]string{v1.ClaimOwnerLabel: "uid-app"}},
				Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: "bky-app-1", Resource: c.refs[0],
					Owner: v1.ClaimOwner{Namespace: "t", Name: "app", UID: "uid-app"}, BucketyUID: uid, Claim: "c1", Resources: c.resources, Serial: 1, Phase: v1.CredentialActive}})
		}
		cl := fake.NewClientBuilder().WithScheme(testScheme(t)).
			WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwner, func(o client.Object) []string {
				return []string{o.GetLabels()[v1.ClaimOwnerLabel]}
			}).WithObjects(objs...).Build()
		r := &Reconciler{Client: cl, APIReader: cl, Backends: set}
		f := &facts{}
		_, _, ok, err := r.resolve(context.Background(), a, f)
		if err != nil || ok {
			t.Fatalf("%s: want the pass to wait for the Bucketies to provision, got ok %v, %v", c.name, ok, err)
		}
		if f.bucketyReplaced != c.replaced {
			t.Errorf("%s: bucketyReplaced = %v, want %v (waiting: %q)", c.name, f.bucketyReplaced, c.replaced, f.bucketyWaiting)
		}
		if said := strings.Contains(f.bucketyWaiting, "so those were revoked"); said != c.replaced {
			t.Errorf("%s: the status says the credentials were revoked: %v, want %v (%q)", c.name, said, c.replaced, f.bucketyWaiting)
		}
		if slices.Contains(c.refs, "o/x") && f.notShared == "" {
			t.Errorf("%s: want the access withdrawn from o/x (not shared), got no notShared", c.name)
		}
	}
}
