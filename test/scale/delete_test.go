package scale

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deleteCollection deletes every object of obj's kind in ns with one
// collection DELETE. On a loaded machine that request can outlive the
// API server's request timeout after deleting only some (at 1000 scoped
// Bucketies it did: stream error, INTERNAL_ERROR); then the rest are
// deleted one by one, 16 at a time, until every object is marked for
// deletion or two minutes pass. What happens after (finalizers, the
// controller's work) is the caller's to wait for and check.
func deleteCollection(t *testing.T, c client.Client, ns string, obj client.Object, list client.ObjectList) {
	t.Helper()
	ctx := context.Background()
	err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns))
	if err == nil {
		return
	}
	t.Logf("delete the %T collection in %s: %v; deleting them one by one", obj, ns, err)
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for {
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("list %T in %s: %v", list, ns, err)
			}
			time.Sleep(time.Second)
			continue
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		var left []client.Object
		for _, o := range objs {
			if co, ok := o.(client.Object); ok && co.GetDeletionTimestamp().IsZero() {
				left = append(left, co)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %T in %s not marked for deletion after 2m; last error: %v", len(left), obj, ns, last)
		}
		var mu sync.Mutex
		last = nil
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		for _, o := range left {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
					mu.Lock()
					last = err
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if last != nil {
			t.Logf("delete one by one in %s: %v (retrying)", ns, last)
		}
	}
}
