package retry

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Waiters remembers which objects wait for what (a claim to be released, a
// namespace to fall under its limit), so a release wakes exactly those
// objects instead of every waiting one in the cluster. It is memory only:
// after a restart every object is reconciled once anyway and registers
// again. A nil *Waiters remembers nothing. Its size is bounded by the number of objects, each registered
// under a few keys at most.
type Waiters struct {
	mu    sync.Mutex
	byKey map[string]map[types.NamespacedName]struct{}
	byObj map[types.NamespacedName][]string
}

// Wait records that obj waits for each of keys, replacing what it waited
// for before.
func (w *Waiters) Wait(obj types.NamespacedName, keys ...string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(obj)
	if len(keys) == 0 {
		return
	}
	if w.byKey == nil {
		w.byKey, w.byObj = map[string]map[types.NamespacedName]struct{}{}, map[types.NamespacedName][]string{}
	}
	for _, k := range keys {
		if w.byKey[k] == nil {
			w.byKey[k] = map[types.NamespacedName]struct{}{}
		}
		w.byKey[k][obj] = struct{}{}
	}
	w.byObj[obj] = keys
}

// Done records that obj waits for nothing.
func (w *Waiters) Done(obj types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forget(obj)
}

func (w *Waiters) forget(obj types.NamespacedName) {
	for _, k := range w.byObj[obj] {
		delete(w.byKey[k], obj)
		if len(w.byKey[k]) == 0 {
			delete(w.byKey, k)
		}
	}
	delete(w.byObj, obj)
}

// Waiting returns the objects waiting for key.
func (w *Waiters) Waiting(key string) []types.NamespacedName {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(w.byKey[key]))
	for o := range w.byKey[key] {
		out = append(out, o)
	}
	return out
}

// Len is how many objects wait.
func (w *Waiters) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byObj)
}
