package access

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// readCounter counts the fresh reads of Secrets' data a Reconciler's
// APIReader makes: GETs of one Secret, and lists.
type readCounter struct {
	mu          sync.Mutex
	gets, lists int
}

func (c *readCounter) reader(t *testing.T, cl client.WithWatch) client.Reader {
	t.Helper()
	return interceptor.NewClient(cl, interceptor.Funcs{
		Get: func(ctx context.Context, w client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			c.mu.Lock()
			c.gets++
			c.mu.Unlock()
			return w.Get(ctx, key, o, opts...)
		},
		List: func(ctx context.Context, w client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			c.mu.Lock()
			c.lists++
			c.mu.Unlock()
			return w.List(ctx, l, opts...)
		},
	})
}

func (c *readCounter) take() (gets, lists int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gets, lists, c.gets, c.lists = c.gets, c.lists, 0, 0
	return gets, lists
}

// TestStatusRecordsTheSecretsVersion: the version of the Secret a pass
// wrote or verified is in the access's status, so a controller that
// starts (a restart, or the replica taking a shard over) verifies a
// Secret nobody touched without reading it; a Secret edited meanwhile, or
// wanted with other data now, is read on its own and repaired; and only
// an access whose status records no Secret (written by an earlier
// release) waits for the start-up read of every Secret.
func TestStatusRecordsTheSecretsVersion(t *testing.T) {
	s := coreScheme(t)
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "orders", UID: "access-uid"},
		Spec: v1.BucketyAccessSpec{CredentialsSecretName: "orders-topic"}}
	// The fake API server gives no UIDs; this one gives each create its own.
	var uids int
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(a.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, w client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			uids++
			o.SetUID(types.UID(fmt.Sprintf("secret-uid-%d", uids)))
			return w.Create(ctx, o, opts...)
		}}).Build()
	counts := &readCounter{}
	// A fresh Reconciler is a controller that has just started: nothing
	// verified in memory.
	started := func() *Reconciler { return &Reconciler{Client: cl, APIReader: counts.reader(t, cl)} }
	data := map[string][]byte{"bootstrap": []byte("kafka:9092"), "topic": []byte("ns.orders")}
	pass := func(r *Reconciler, a *v1.BucketyAccess, data map[string][]byte) {
		t.Helper()
		f := &facts{}
		if conflict, err := r.writeSecret(ctx, a, data, f); err != nil || conflict || !f.synced {
			t.Fatalf("writeSecret: conflict %v, err %v, synced %v", conflict, err, f.synced)
		}
	}
	current := func() *corev1.Secret {
		t.Helper()
		sec := &corev1.Secret{}
		if err := cl.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "orders-topic"}, sec); err != nil {
			t.Fatal(err)
		}
		return sec
	}
	recorded := func(why string) {
		t.Helper()
		sec := current()
		got := a.Status.Secret
		if got == nil || got.UID != string(sec.UID) || got.ResourceVersion != sec.ResourceVersion || got.Digest != secretDigest(a.UID, sec.Data) {
			t.Fatalf("%s: want status.secret at the Secret's uid %s and resourceVersion %s, got %+v", why, sec.UID, sec.ResourceVersion, got)
		}
	}

	// read checks the fresh reads since the last check.
	read := func(why string, wantGets, wantLists int) {
		t.Helper()
		if gets, lists := counts.take(); gets != wantGets || lists != wantLists {
			t.Errorf("%s: want %d GETs and %d lists, got %d and %d", why, wantGets, wantLists, gets, lists)
		}
	}

	pass(started(), a, data)
	recorded("created")
	counts.take()

	// Started again, nothing touched: verified from the status alone.
	pass(started(), a, data)
	read("a start over an untouched Secret", 0, 0)

	// Edited while no controller ran: read on its own, and repaired.
	sec := current()
	sec.Data["topic"] = []byte("someone-elses-topic")
	if err := cl.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	pass(started(), a, data)
	read("a start over an edited Secret", 1, 0)
	if got := string(current().Data["topic"]); got != "ns.orders" {
		t.Errorf("the edited Secret: want it repaired to ns.orders, got %q", got)
	}
	recorded("repaired")

	// Wanted with other data now (the backend's configuration changed):
	// the status does not vouch for it.
	moved := map[string][]byte{"bootstrap": []byte("kafka-2:9092"), "topic": []byte("ns.orders")}
	pass(started(), a, moved)
	read("a start with other data wanted", 1, 0)
	if got := string(current().Data["bootstrap"]); got != "kafka-2:9092" {
		t.Errorf("want the Secret rewritten with the new bootstrap, got %q", got)
	}
	recorded("rewritten")

	// Deleted and created again by someone with the same data: another
	// UID, so not vouched for by a resourceVersion that might coincide.
	other := a.DeepCopy()
	other.Status.Secret.UID = "another-secret-uid"
	if statusVouches(other, current(), moved) {
		t.Error("a status naming another Secret UID vouched for this one")
	}

	// Written by an earlier release: no status.secret, so the start-up
	// read lists the shard's Secrets.
	legacy := a.DeepCopy()
	legacy.Status.Secret = nil
	pass(started(), legacy, moved)
	if _, lists := counts.take(); lists == 0 {
		t.Error("an access without status.secret: want the start-up list of every Secret, got none")
	}
	if legacy.Status.Secret == nil {
		t.Error("an access without status.secret: want it recorded after its pass")
	}

	// A credential of the access's own (a password its tenant may have
	// chosen): no digest of it in status, and one recorded before is
	// dropped.
	scoped := a.DeepCopy()
	perAccess := true
	f := &facts{perAccess: &perAccess}
	if _, err := started().writeSecret(ctx, scoped, moved, f); err != nil || !f.synced {
		t.Fatalf("writeSecret of a per-access credential: err %v, synced %v", err, f.synced)
	}
	if scoped.Status.Secret != nil {
		t.Errorf("an access with a credential of its own: want no status.secret, got %+v", scoped.Status.Secret)
	}
	counts.take()

	// The digest neither holds the data nor equals another access's for
	// the same data.
	d := secretDigest(a.UID, moved)
	if strings.Contains(d, "kafka") || d == secretDigest("another-access", moved) || len(d) != 64 {
		t.Errorf("digest %q: want 64 hex digits, different per access", d)
	}
}
