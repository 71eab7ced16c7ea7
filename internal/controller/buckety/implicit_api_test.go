package buckety

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TestImplicitWritesOnlyTheAccessTheyRead, on a real API server (the
// fake client ignores preconditions): a Buckety's pass acting on its
// implicit access as its cache shows it, after that access was deleted
// and a tenant created an access of its own under the same name, neither
// deletes the tenant's access (spec.defaultAccess removed, its Secret name
// changed, the Buckety deleted) nor rewrites its role, and records no
// removal event; on the access as it is, the same calls delete it.
func TestImplicitWritesOnlyTheAccessTheyRead(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{CRDDirs: []string{controlplane.CRDDir()}})
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "media"},
		Spec: v1.BucketySpec{Backend: "kafka", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "media-app"}}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Recorder: rec}
	access := func(secret string, implicit bool) *v1.BucketyAccess {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "media"},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "media"}, CredentialsSecretName: secret, Role: v1.RoleReadOnly}}
		if implicit {
			a.Labels = map[string]string{v1.ImplicitLabel: "true"}
			a.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(b, v1.GroupVersion.WithKind("Buckety"))}
		}
		if err := c.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// stale is the implicit access as a lagging cache still shows it: the
	// API server has the tenant's access of the same name instead.
	stale := access("media-app", true)
	if !IsImplicit(stale, b) {
		t.Fatal("the fixture's implicit access is not implicit")
	}
	if err := c.Delete(ctx, stale.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	tenants := access("tenants-own", false)
	intact := func(step string) {
		t.Helper()
		var got v1.BucketyAccess
		if err := c.Get(ctx, client.ObjectKeyFromObject(tenants), &got); err != nil {
			t.Fatalf("%s: the tenant's access: %v", step, err)
		}
		if got.UID != tenants.UID || got.Spec.Role != v1.RoleReadOnly || got.Spec.CredentialsSecretName != "tenants-own" {
			t.Errorf("%s: want the tenant's access as it made it (UID %s, ReadOnly, tenants-own), got UID %s, %s, %s",
				step, tenants.UID, got.UID, got.Spec.Role, got.Spec.CredentialsSecretName)
		}
	}

	if err := r.removeImplicit(ctx, b, stale.DeepCopy(), 0); err != nil {
		t.Errorf("spec.defaultAccess removed: %v", err)
	}
	intact("spec.defaultAccess removed")
	select {
	case e := <-rec.Events:
		t.Errorf("want no event for an access already gone, got %q", e)
	default:
	}
	if err := r.convergeImplicit(ctx, stale.DeepCopy(), &v1.DefaultAccess{CredentialsSecretName: "another"}); err != nil {
		t.Errorf("another Secret name: %v", err)
	}
	intact("another Secret name")
	// The role: the patch carries the resourceVersion read, and the API
	// server refuses it.
	if err := r.convergeImplicit(ctx, stale.DeepCopy(), &v1.DefaultAccess{CredentialsSecretName: "media-app", Role: v1.RoleReadWrite}); err == nil {
		t.Error("another role: want the patch of an access deleted since refused, got no error")
	}
	intact("another role")
	f := &facts{}
	list := func(context.Context, *v1.Buckety) ([]v1.BucketyAccess, error) {
		return []v1.BucketyAccess{*stale.DeepCopy()}, nil
	}
	if _, err := r.heldBack(ctx, b, list, f); err != nil {
		t.Errorf("the Buckety deleted: %v", err)
	}
	intact("the Buckety deleted")

	// The same calls on the implicit access as it is do their work.
	if err := c.Delete(ctx, tenants); err != nil {
		t.Fatal(err)
	}
	current := access("media-app", true)
	if err := r.convergeImplicit(ctx, current.DeepCopy(), &v1.DefaultAccess{CredentialsSecretName: "media-app", Role: v1.RoleReadWrite}); err != nil {
		t.Fatalf("another role, on the access as it is: %v", err)
	}
	var got v1.BucketyAccess
	if err := c.Get(ctx, client.ObjectKeyFromObject(current), &got); err != nil || got.Spec.Role != v1.RoleReadWrite {
		t.Errorf("another role, on the access as it is: want ReadWrite, got %s (%v)", got.Spec.Role, err)
	}
	if err := r.removeImplicit(ctx, b, got.DeepCopy(), 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(current), &got); err == nil {
		t.Errorf("spec.defaultAccess removed, on the access as it is: want it deleted, got it (deleting since %v)", got.DeletionTimestamp)
	}
	select {
	case e := <-rec.Events:
		t.Logf("event: %s", e)
	default:
		t.Error("spec.defaultAccess removed, on the access as it is: want the removal's event, got none")
	}
}
