package status

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

var bucketyStatus = StatusFields[*v1.Buckety, v1.BucketyStatus]{
	Status:             func(b *v1.Buckety) *v1.BucketyStatus { return &b.Status },
	Conditions:         func(s *v1.BucketyStatus) *[]metav1.Condition { return &s.Conditions },
	ObservedGeneration: func(s *v1.BucketyStatus) *int64 { return &s.ObservedGeneration },
}

// TestFinishPatchesOnlyAChangedStatus: Finish writes the derived
// conditions, and observedGeneration once Ready, in one status patch; a
// reconcile that changed nothing in the status (a finalizer aside) makes
// none; a failure gets the backoff's delay.
func TestFinishPatchesOnlyAChangedStatus(t *testing.T) {
	c, patches := patchCounting(t)
	ctx := context.Background()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders", Generation: 3}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	ready := []Cond{True(v1.ConditionReady, v1.ReasonReconciled, "in sync")}
	finish := func(derived []Cond, f retry.Failure, edit func(*v1.Buckety)) reconcile.Result {
		t.Helper()
		cur := &v1.Buckety{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		if edit != nil {
			edit(cur)
		}
		res, err := Finish(ctx, c, &retry.Backoff{}, bucketyStatus, cur, orig, Outcome{Derived: derived, Failure: f}, reconcile.Result{RequeueAfter: time.Hour}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	finish(ready, retry.None, nil)
	got := &v1.Buckety{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	if *patches != 1 || !meta.IsStatusConditionTrue(got.Status.Conditions, v1.ConditionReady) || got.Status.ObservedGeneration != got.Generation {
		t.Fatalf("first pass: want one status patch writing Ready=True and observedGeneration %d, got %d patches, %+v", got.Generation, *patches, got.Status)
	}
	finish(ready, retry.None, func(b *v1.Buckety) { b.Finalizers = append(b.Finalizers, v1.Finalizer) })
	if *patches != 1 {
		t.Errorf("pass with an unchanged status: want no status patch, got %d more", *patches-1)
	}
	if res := finish(ready, retry.Transient, nil); res.RequeueAfter != retry.TransientBase {
		t.Errorf("transient failure: want the retry after %s, got %s", retry.TransientBase, res.RequeueAfter)
	}
	finish([]Cond{False(v1.ConditionReady, v1.ReasonBackendUnreachable, "down")}, retry.Transient, nil)
	if *patches != 2 {
		t.Errorf("pass that changed Ready: want one more status patch, got %d more", *patches-1)
	}
}

// TestFinishKeepsRecordedTimes: a pass that starts from a status other
// than the recorded one (a status held in memory, buckety.Held) and
// derives the recorded conditions again patches nothing: neither a
// transition time to the nanosecond that the API server would store to the
// second, nor a transition the recorded status never showed.
func TestFinishKeepsRecordedTimes(t *testing.T) {
	c, patches := patchCounting(t)
	ctx := context.Background()
	recorded := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders", Generation: 1}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status.Conditions = []metav1.Condition{
		{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonBackendUnreachable, Message: "down", ObservedGeneration: 1, LastTransitionTime: recorded},
		{Type: v1.ConditionProvisioned, Status: metav1.ConditionFalse, Reason: v1.ReasonBackendUnreachable, Message: "down", ObservedGeneration: 1, LastTransitionTime: recorded},
	}
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	derived := []Cond{False(v1.ConditionReady, v1.ReasonBackendUnreachable, "down"), False(v1.ConditionProvisioned, v1.ReasonBackendUnreachable, "down")}
	for _, start := range []struct {
		name string
		edit func(cs []metav1.Condition)
	}{
		{"the recorded status with times to the nanosecond", func(cs []metav1.Condition) {
			for i := range cs {
				cs[i].LastTransitionTime = metav1.NewTime(time.Now())
			}
		}},
		{"a held status with Provisioned True", func(cs []metav1.Condition) {
			cs[1] = metav1.Condition{Type: v1.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(time.Now())}
		}},
	} {
		cur := &v1.Buckety{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
			t.Fatal(err)
		}
		orig := cur.DeepCopy()
		start.edit(cur.Status.Conditions)
		if _, err := Finish(ctx, c, &retry.Backoff{}, bucketyStatus, cur, orig, Outcome{Derived: derived, Failure: retry.Transient}, reconcile.Result{}, nil); err != nil {
			t.Fatal(err)
		}
		if *patches != 0 {
			t.Errorf("pass starting from %s, deriving the recorded conditions: want no status patch, got %d", start.name, *patches)
		}
		for _, cd := range cur.Status.Conditions {
			if !cd.LastTransitionTime.Equal(&recorded) {
				t.Errorf("pass starting from %s: want %s's recorded transition time %s, got %s", start.name, cd.Type, recorded, cd.LastTransitionTime)
			}
		}
		*patches = 0
	}
}

// patchCounting is a fake client that counts status patches.
func patchCounting(t *testing.T) (client.Client, *int) {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	patches := new(int)
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.Buckety{}).Build(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			*patches++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}), patches
}

// TestFinishRerun: the status write goes through Written.Write, so its
// own watch event, come before the answer, is dropped and the pass keeps
// its result; an event of a newer version come meanwhile (someone else's
// change, dropped with it) makes the pass run again after RaceRetry.
func TestFinishRerun(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	w := &Written{}
	var during func(written *v1.Buckety)
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.Buckety{}).Build(), interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			during(obj.(*v1.Buckety)) // the watch events, before the answer
			return nil
		},
	})
	ctx := context.Background()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders", Generation: 1}}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	pass := func(msg string) reconcile.Result {
		t.Helper()
		cur := &v1.Buckety{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
			t.Fatal(err)
		}
		res, err := Finish(ctx, c, &retry.Backoff{}, bucketyStatus, cur, cur.DeepCopy(), Outcome{Derived: []Cond{True(v1.ConditionReady, v1.ReasonReconciled, msg)}, Failure: retry.None, Written: w}, reconcile.Result{RequeueAfter: time.Hour}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	during = func(written *v1.Buckety) {
		if !w.Echoes(written.DeepCopy()) {
			t.Error("want the write's own event dropped while it is under way")
		}
	}
	if res := pass("one"); res.RequeueAfter != time.Hour {
		t.Errorf("own event only: want the pass's result kept, got %+v", res)
	}
	during = func(written *v1.Buckety) {
		newer := written.DeepCopy()
		newer.ResourceVersion = "999999"
		if !w.Echoes(newer) {
			t.Error("want a status-only event dropped while the write is under way")
		}
	}
	if res := pass("two"); res.RequeueAfter != RaceRetry {
		t.Errorf("a newer version's event dropped during the write: want a rerun after %s, got %+v", RaceRetry, res)
	}
}
