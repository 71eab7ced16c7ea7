package buckety

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// TestDrainCalledOff: a drain step asks, before each batch, whether its
// drain was called off (DrainLimits.Stop): not while the Buckety still
// asks for the request the step runs for; yes once spec.drain is removed
// or asks for another request, once the Buckety is being deleted or gone,
// or is another Buckety of the same name.
func TestDrainCalledOff(t *testing.T) {
	s := testScheme(t)
	ctx := context.Background()
	base := func() *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orders", UID: "uid-orders", Finalizers: []string{v1.Finalizer}},
			Spec: v1.BucketySpec{Backend: "s3", Drain: &v1.DrainSpec{Request: "r1"}}}
	}
	for _, c := range []struct {
		name string
		now  func(c client.Client, b *v1.Buckety) error
		want bool
	}{
		{"still asked for", func(client.Client, *v1.Buckety) error { return nil }, false},
		{"spec.drain removed", func(c client.Client, b *v1.Buckety) error { b.Spec.Drain = nil; return c.Update(ctx, b) }, true},
		{"another request", func(c client.Client, b *v1.Buckety) error { b.Spec.Drain.Request = "r2"; return c.Update(ctx, b) }, true},
		{"being deleted", func(c client.Client, b *v1.Buckety) error { return c.Delete(ctx, b) }, true},
		{"gone", func(c client.Client, b *v1.Buckety) error {
			b.Finalizers = nil
			if err := c.Update(ctx, b); err != nil {
				return err
			}
			return c.Delete(ctx, b)
		}, true},
		{"another Buckety of the name", func(c client.Client, b *v1.Buckety) error {
			b.Finalizers = nil
			if err := c.Update(ctx, b); err != nil {
				return err
			}
			if err := c.Delete(ctx, b); err != nil {
				return err
			}
			again := base()
			again.UID = "uid-again"
			return c.Create(ctx, again)
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(s).WithObjects(base()).Build()
			r := &Reconciler{Client: cl}
			b := &v1.Buckety{}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "team", Name: "orders"}, b); err != nil {
				t.Fatal(err)
			}
			stop := r.drainCalledOff(ctx, b, "r1")
			if stop() {
				t.Fatal("want the step to go on before anything changed")
			}
			cur := b.DeepCopy()
			if err := c.now(cl, cur); err != nil {
				t.Fatal(err)
			}
			if got := stop(); got != c.want {
				t.Errorf("want called off %v, got %v", c.want, got)
			}
		})
	}
}

// TestDrainEndedReadsTheServersSpec: before a step, the server's Buckety
// is read (drainEnded); a step whose cache still shows the request, while
// the server's spec.drain no longer asks for it (removed, changed) or the
// Buckety is being deleted, is called off before it deletes anything: the
// tenant may have written after the cancel, and a step deletes up to
// --drain-units entries.
func TestDrainEndedReadsTheServersSpec(t *testing.T) {
	s := testScheme(t)
	ctx := context.Background()
	base := func() *v1.Buckety {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "orders", UID: "uid-orders", Finalizers: []string{v1.Finalizer}},
			Spec: v1.BucketySpec{Backend: "s3", Drain: &v1.DrainSpec{Request: "r1"}}}
		b.Status.Drain = &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, UID: "uid-orders"}
		return b
	}
	for _, c := range []struct {
		name                    string
		now                     func(c client.Client, b *v1.Buckety) error
		wantCalledOff, wantGone bool
	}{
		{"still asked for", func(client.Client, *v1.Buckety) error { return nil }, false, false},
		{"spec.drain removed", func(c client.Client, b *v1.Buckety) error { b.Spec.Drain = nil; return c.Update(ctx, b) }, true, false},
		{"another request", func(c client.Client, b *v1.Buckety) error { b.Spec.Drain.Request = "r2"; return c.Update(ctx, b) }, true, false},
		{"being deleted", func(c client.Client, b *v1.Buckety) error { return c.Delete(ctx, b) }, true, false},
		{"gone", func(c client.Client, b *v1.Buckety) error {
			b.Finalizers = nil
			if err := c.Update(ctx, b); err != nil {
				return err
			}
			return c.Delete(ctx, b)
		}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(s).WithObjects(base()).WithStatusSubresource(&v1.Buckety{}).Build()
			r := &Reconciler{Client: cl, APIReader: cl}
			cached := &v1.Buckety{}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "team", Name: "orders"}, cached); err != nil {
				t.Fatal(err)
			}
			if err := c.now(cl, cached.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			ended, gone, calledOff, err := r.drainEnded(ctx, cached, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if ended != nil || gone != c.wantGone || calledOff != c.wantCalledOff {
				t.Errorf("want ended nil, gone %v, called off %v; got %+v, %v, %v", c.wantGone, c.wantCalledOff, ended, gone, calledOff)
			}
		})
	}
}

// testScheme has buckety's kinds and client-go's.
func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := objects.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
