package status

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Written remembers, per object, the resourceVersion of this controller's
// own last write to it, until the cache has caught up with that write.
//
// A write to an object enqueues it again (the watch sees the write); a
// write made early in a reconcile (the finalizer) enqueues it while the
// reconcile still runs, so the next one starts the moment this one ends,
// often before the cache holds the status this one just patched. That
// reconcile would decide from the old status: repeat a status patch, an
// event, or a step the finished one already took. It is skipped instead,
// without a write or a backend call: the watch event of the newer write
// enqueues the object again, and by then the cache holds it.
//
// An entry lives only until the cache shows the write, so the map holds
// the objects written in the last moments, not every object.
type Written struct {
	mu sync.Mutex
	rv map[types.NamespacedName]string
}

// Record notes obj's resourceVersion after this reconcile's writes, when
// they changed it from before.
func (w *Written) Record(obj client.Object, before string) {
	if w == nil || obj.GetResourceVersion() == before || obj.GetResourceVersion() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv == nil {
		w.rv = map[types.NamespacedName]string{}
	}
	w.rv[client.ObjectKeyFromObject(obj)] = obj.GetResourceVersion()
}

// Stale reports whether cached, as read from the cache, is older than this
// controller's last write to it. Resource versions that are not comparable
// (an API server not backed by etcd) are never stale.
func (w *Written) Stale(cached client.Object) bool {
	if w == nil {
		return false
	}
	key := client.ObjectKeyFromObject(cached)
	w.mu.Lock()
	defer w.mu.Unlock()
	want, ok := w.rv[key]
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), want)
	if err != nil || cmp >= 0 {
		delete(w.rv, key)
		return false
	}
	return true
}

// Forget drops what is remembered of an object that is gone.
func (w *Written) Forget(key types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}
