package buckety

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// TestLoweredQuotaWaitsForAMeasurementTakenAfterIt: a quota lowered from
// 6 MiB to 1 MiB counts what its bucket holds only by a measurement taken
// after this process first found the lowering (and the pass had it
// applied on the server). One taken a minute before, on the empty bucket
// and still fresh, says nothing of what was written since: counted, it
// let a tenant fill the bucket, lower its quota and fill another under the
// same budget. The pass is looked at again when the next measurement is
// due. A measurement taken after counts; a lowering to another figure
// waits anew; a quota not lowered reads the fresh usage as before.
func TestLoweredQuotaWaitsForAMeasurementTakenAfterIt(t *testing.T) {
	const mi = 1 << 20
	r := &Reconciler{UsageMaxAge: 15 * time.Minute}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{UID: "uid-filled"}}
	measured := func(at time.Time) {
		b.Status.Usage = &v1.Usage{Bytes: 0, MeasuredAt: metav1.NewTime(at)}
	}
	had := v1.Budgeted{QuotaBytes: 6 * mi}
	lowered := v1.Budgeted{QuotaBytes: 1 * mi}

	measured(time.Now().Add(-time.Minute))
	f := &facts{}
	if u := r.usageAfterLowering(b, lowered, had, f); u != nil {
		t.Errorf("a measurement taken before the lowering was found: want it not to count, got %+v", u)
	}
	if f.usageIn <= 0 || f.usageIn > r.UsageMaxAge/3+2*loweringSettle {
		t.Errorf("want the Buckety looked at again when the next measurement is due, got in %s", f.usageIn)
	}
	measured(time.Now().Add(loweringSettle + time.Second))
	if u := r.usageAfterLowering(b, lowered, had, &facts{}); u == nil {
		t.Error("a measurement taken after the lowering (and its settling): want it to count, got none")
	}
	measured(time.Now())
	if u := r.usageAfterLowering(b, v1.Budgeted{QuotaBytes: 2 * mi}, had, &facts{}); u != nil {
		t.Errorf("lowered to another figure since: want it to wait for a measurement anew, got %+v", u)
	}
	measured(time.Now().Add(-time.Minute))
	if u := r.usageAfterLowering(b, had, had, &facts{}); u == nil {
		t.Error("a quota not lowered: want the fresh usage as before, got none")
	}
	if len(r.lowered) != 0 {
		t.Errorf("want the lowering forgotten once the quota is not lowered, got %v", r.lowered)
	}
}

// TestForgottenLoweringWaitsAgain: the lowerings a pass found are kept
// only while they may still be needed, one per Buckety name, so a tenant
// lowering quotas across many Bucketies, or deleting them with their
// finalizer removed by hand, or making them again under the same name,
// grows the map no further than the Bucketies that exist. Each way an
// entry goes (the quota no longer lowered, the Buckety not found by the
// pass that starts on it, its deletion pass) leaves a quota still lowered
// waiting again, as one just found: a measurement that would have counted
// for the sighting forgotten (taken long after it) does not count for the
// new one, so a drop never frees budget early. A Buckety made again under
// the name of one whose lowering is kept is found anew too, and without
// measurements (UsageMaxAge 0) nothing is kept.
func TestForgottenLoweringWaitsAgain(t *testing.T) {
	const mi = 1 << 20
	had := v1.Budgeted{QuotaBytes: 6 * mi}
	lowered := v1.Budgeted{QuotaBytes: 1 * mi}
	key := types.NamespacedName{Namespace: "team-a", Name: "filled"}
	newBuckety := func(uid types.UID) *v1.Buckety {
		return &v1.Buckety{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: uid},
			// Taken a minute ago: long after the sighting the test makes
			// an hour old, long before one made now.
			Status: v1.BucketyStatus{Usage: &v1.Usage{Bytes: 0, MeasuredAt: metav1.NewTime(time.Now().Add(-time.Minute))}},
		}
	}
	for _, tc := range []struct {
		name string
		// forget drops r's lowering of b by the way under test.
		forget func(t *testing.T, r *Reconciler, b *v1.Buckety)
		// again is the Buckety the pass after finds under the name.
		again types.UID
		// kept: forget leaves the entry, which the pass after replaces.
		kept bool
	}{{
		name: "quota no longer lowered",
		forget: func(t *testing.T, r *Reconciler, b *v1.Buckety) {
			if u := r.usageAfterLowering(b, had, had, &facts{}); u == nil {
				t.Error("a quota not lowered: want the fresh usage, got none")
			}
		},
		again: "uid-1",
	}, {
		name: "not found when its pass starts (finalizer removed by hand)",
		forget: func(t *testing.T, r *Reconciler, _ *v1.Buckety) {
			r.Client = fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
		},
		again: "uid-2",
	}, {
		name: "its deletion pass",
		forget: func(t *testing.T, r *Reconciler, b *v1.Buckety) {
			d := b.DeepCopy()
			d.Finalizers = []string{v1.Finalizer}
			now := metav1.Now()
			d.DeletionTimestamp = &now
			cl := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(d).
				WithIndex(&v1.BucketyClaim{}, objects.IndexClaimOwner, func(o ctrl.Object) []string {
					return []string{o.(*v1.BucketyClaim).Spec.Owner.UID}
				}).
				WithIndex(&v1.BucketyAccess{}, objects.IndexBucketyRef, func(o ctrl.Object) []string {
					return objects.RefKeys(o.(*v1.BucketyAccess))
				}).Build()
			r.Client, r.APIReader = cl, cl
			r.Claims = &claims.Store{Client: cl, APIReader: cl}
			if _, err := r.reconcileDelete(context.Background(), d, &facts{}); err != nil {
				t.Fatal(err)
			}
		},
		again: "uid-2",
	}, {
		name:   "made again under its name",
		forget: func(*testing.T, *Reconciler, *v1.Buckety) {},
		again:  "uid-2",
		kept:   true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{UsageMaxAge: 15 * time.Minute}
			b := newBuckety("uid-1")
			if u := r.usageAfterLowering(b, lowered, had, &facts{}); u != nil {
				t.Fatalf("a measurement taken before the lowering was found: want it not to count, got %+v", u)
			}
			// Found an hour ago: the measurement of a minute ago counts.
			l := r.lowered[key]
			l.seen = l.seen.Add(-time.Hour)
			r.lowered[key] = l
			if u := r.usageAfterLowering(b, lowered, had, &facts{}); u == nil {
				t.Fatal("a measurement taken long after the lowering was found: want it to count, got none")
			}
			tc.forget(t, r, b)
			if _, kept := r.lowered[key]; kept != tc.kept {
				t.Errorf("want the lowering kept %t, got %+v", tc.kept, r.lowered)
			}
			f := &facts{}
			if u := r.usageAfterLowering(newBuckety(tc.again), lowered, had, f); u != nil {
				t.Errorf("still lowered after the lowering was forgotten: want the pass to wait again for a measurement, got %+v counted", u)
			}
			if f.usageIn <= 0 {
				t.Errorf("want the Buckety looked at again when the next measurement is due, got in %s", f.usageIn)
			}
			if len(r.lowered) != 1 {
				t.Errorf("want one lowering kept, the one found anew, got %v", r.lowered)
			}
		})
	}

	r := &Reconciler{}
	if u := r.usageAfterLowering(newBuckety("uid-1"), lowered, had, &facts{}); u != nil || len(r.lowered) != 0 {
		t.Errorf("without measurements: want no usage counted and no lowering kept, got %+v and %v", u, r.lowered)
	}
}
