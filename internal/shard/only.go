package shard

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Serves is what one shard's manager serves: shard K of N. A nil *Serves
// serves everything (one shard).
type Serves struct{ K, N int }

// Namespace reports whether s reconciles namespace ns's objects.
func (s *Serves) Namespace(ns string) bool {
	return s == nil || ns == "" || Home(ns, s.N) == s.K
}

// Only runs r for the requests of the namespaces s serves: a shard's cache
// holds the objects every shard reads (Everywhere), and their events
// still wake what they map to, but only their home shard reconciles them.
func Only(r reconcile.Reconciler, s *Serves) reconcile.Reconciler {
	if s == nil {
		return r
	}
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if !s.Namespace(req.Namespace) {
			return reconcile.Result{}, nil
		}
		return r.Reconcile(ctx, req)
	})
}

// HomeOnly is a client whose List keeps only the objects of the namespaces
// s serves (and cluster-scoped ones): the leader-only loops that act on
// every object of a kind (the drift sweep, the usage refresh) act on their
// shard's.
func HomeOnly(c client.Client, s *Serves) client.Client {
	if s == nil {
		return c
	}
	return homeOnly{Client: c, s: s}
}

type homeOnly struct {
	client.Client
	s *Serves
}

func (h homeOnly) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := h.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := make([]runtime.Object, 0, len(items))
	for _, o := range items {
		if m, ok := o.(client.Object); !ok || h.s.Namespace(m.GetNamespace()) {
			kept = append(kept, o)
		}
	}
	if len(kept) == len(items) {
		return nil
	}
	return meta.SetList(list, kept)
}
