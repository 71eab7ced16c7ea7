package access

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/queue"
)

// TestStartWakesQueueSettledWorkLater: at a start the initial list's
// Secrets and settled Bucketies queue their accesses as low-priority
// work, so another namespace's ordinary work added after them (an access
// a tenant changed) is handed out first; an unsettled Buckety's accesses,
// and a Secret written after the start, queue ordinary work, handed out
// in the order it came. Each handler is the one SetupWithManager watches
// with.
func TestStartWakesQueueSettledWorkLater(t *testing.T) {
	s := testScheme(t)
	access := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a", UID: "uid-a"},
		Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Name: "x"}}}}
	c := fake.NewClientBuilder().WithScheme(s).
		WithIndex(&v1.BucketyAccess{}, objects.IndexBucketyRef, func(o client.Object) []string {
			return objects.RefKeys(o.(*v1.BucketyAccess))
		}).WithObjects(access).Build()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1.GroupVersion.WithKind("BucketyAccess"), meta.RESTScopeNamespace)
	secret := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a-secret", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess", Name: "a", UID: "uid-a", Controller: new(true)}}}}
	buckety := func(settled bool) *v1.Buckety {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "x", Generation: 3}}
		b.Status.ObservedGeneration = 2
		if settled {
			b.Status.ObservedGeneration = 3
		}
		b.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionTrue}}
		return b
	}
	for _, tc := range []struct {
		name  string
		h     handler.EventHandler
		e     event.CreateEvent
		first string
	}{
		{"a Secret of the initial list", ownSecrets(s, mapper), event.CreateEvent{Object: secret, IsInInitialList: true}, "zz/changed"},
		{"a Secret written after the start", ownSecrets(s, mapper), event.CreateEvent{Object: secret}, "team/a"},
		{"a settled Buckety of the initial list", bucketyWakes(c, logr.Discard()), event.CreateEvent{Object: buckety(true), IsInInitialList: true}, "zz/changed"},
		{"an unsettled Buckety of the initial list", bucketyWakes(c, logr.Discard()), event.CreateEvent{Object: buckety(false), IsInInitialList: true}, "team/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := queue.NewFair("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()
			tc.h.Create(context.Background(), tc.e, q)
			if q.Len() != 1 {
				t.Fatalf("want the access queued, got %d items", q.Len())
			}
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "zz", Name: "changed"}})
			got, _ := q.Get()
			if got.String() != tc.first {
				t.Errorf("handed out first: %s, want %s", got, tc.first)
			}
		})
	}
}
