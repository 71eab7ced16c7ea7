package shard

import (
	"context"
	"errors"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Readers reads across the shards a replica holds, each through its own
// cache and only its own namespaces' objects (HomeOnly), so an object
// every shard reads is counted once: the replica's resource gauges
// (internal/metrics) read through it.
type Readers struct {
	mu sync.Mutex
	by map[int]client.Reader
}

// Set makes r shard k's reader; a nil r removes it.
func (rs *Readers) Set(k int, r client.Reader) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.by == nil {
		rs.by = map[int]client.Reader{}
	}
	if r == nil {
		delete(rs.by, k)
		return
	}
	rs.by[k] = r
}

func (rs *Readers) held() []client.Reader {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	ks := make([]int, 0, len(rs.by))
	for k := range rs.by {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	out := make([]client.Reader, 0, len(ks))
	for _, k := range ks {
		out = append(out, rs.by[k])
	}
	return out
}

// Get reads key from the first shard that has it.
func (rs *Readers) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	for _, r := range rs.held() {
		if err := r.Get(ctx, key, obj, opts...); !apierrors.IsNotFound(err) {
			return err
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.String())
}

// List lists every held shard's objects into list.
func (rs *Readers) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var all []runtime.Object
	for _, r := range rs.held() {
		part, ok := list.DeepCopyObject().(client.ObjectList)
		if !ok {
			return errors.New("shard readers: a list that does not copy to its own type")
		}
		if err := r.List(ctx, part, opts...); err != nil {
			return err
		}
		items, err := meta.ExtractList(part)
		if err != nil {
			return err
		}
		all = append(all, items...)
	}
	return meta.SetList(list, all)
}
