package buckety

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// TestClaimRetainedWakesNameWaiters: a claim turning retained (its
// Buckety deleted with Retain) wakes, once the cache shows it, the
// Bucketies waiting for its name and no one else; a claim that stays
// held, or was retained already, wakes no one. Without it a waiter woken
// by the deleting pass before the cache saw the change waited for good.
func TestClaimRetainedWakesNameWaiters(t *testing.T) {
	w := &retry.Waiters{}
	wantY := types.NamespacedName{Namespace: "team", Name: "want-y"}
	other := types.NamespacedName{Namespace: "team", Name: "want-x"}
	w.Wait(wantY, claimKey("y"))
	w.Wait(other, claimKey("x"), limitKey("kafka", "team"))
	owner := v1.ClaimOwner{Namespace: "team", Name: "own-y", UID: "u1"}
	held := &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: "y"}, Spec: v1.BucketyClaimSpec{Backend: "kafka", Owner: owner}}
	retained := held.DeepCopy()
	retained.Spec.Retained = &v1.ClaimRetained{Owner: owner, Phase: v1.ClaimCreated}

	h := claimReleased(w)
	for _, c := range []struct {
		name     string
		old, new *v1.BucketyClaim
		want     []types.NamespacedName
	}{
		{"turned retained", held, retained, []types.NamespacedName{wantY}},
		{"still held", held, held.DeepCopy(), nil},
		{"retained already", retained, retained.DeepCopy(), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}, q)
			if q.Len() != len(c.want) {
				t.Fatalf("want %d woken, got %d", len(c.want), q.Len())
			}
			for _, nn := range c.want {
				got, _ := q.Get()
				if got.NamespacedName != nn {
					t.Errorf("want %s woken, got %s", nn, got.NamespacedName)
				}
				q.Done(got)
			}
		})
	}
}
