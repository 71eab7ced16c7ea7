// Package pagedcache fills controller-runtime caches by lists in pages
// instead of client-go's watch-list streams: NewInformer is a
// cache.Options.NewInformer.
package pagedcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// Why not the stream. client-go
// (WatchListClient, on by default since 1.35) fills an informer by one watch
// that first streams every object selected, then goes on as the watch. The
// API server sends that stream from its watch cache, and while it does, the
// watcher takes none of the kind's new events: they wait in a buffer of
// about ten. On a busy kind the buffer fills within a second, the API server
// waits 100 ms at most, then closes the watch "due to unresponsiveness"; the
// informer starts the stream again from the first object, and the same
// happens again (kubernetes/kubernetes#129197). So a replica that must read
// a large share quickly, as one taking over a dead replica's shards while
// the other shards' status writes go on, is the one that cannot fill its
// caches: at 100,000 Bucketies on 16 shards the API server closed five of
// the takers' initial streams 42-67 s into them, and their shards' Bucketies
// waited 118 s. A webhook replica that starts beside 100,000 Bucketies
// fills its cache of all of them the same way. A list is a plain request: it is answered whole, however
// busy the kind, and the watch that follows it starts from the list's
// resourceVersion, with nothing to send first but what changed meanwhile.
//
// A list in pages keeps what a list costs the replica near what the stream
// cost: each page's objects go through the cache's transform (the
// controller's strip and compact) as soon as the page is decoded, so the
// objects listed are held at their cached size, not as decoded (with
// managedFields), until the informer stores them, and the informer stores
// them without transforming them again.

// PageSize is how many objects each page of a cache's list holds
// (client-go's own default page).
var PageSize int64 = 500

// NewInformer is an informer constructor for controller-runtime's
// cache.Options.NewInformer: client-go's shared informer over lw, filled by
// a list in pages, with the cache's transform applied page by page.
func NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
	p := &pagedLister{lw: toolscache.ToListerWatcherWithContext(lw)}
	return &pagedInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(p, obj, resync, idx), lister: p}
}

// pagedInformer is a shared informer that hands the transform it is given
// to its lister, and stores what the lister transformed as it is: a
// transform need not leave its own result as it is (the webhook's counts a
// Buckety's footprint from the parameters it then strips), so none runs
// twice on an object.
type pagedInformer struct {
	toolscache.SharedIndexInformer
	lister *pagedLister
}

func (i *pagedInformer) SetTransform(t toolscache.TransformFunc) error {
	var stored toolscache.TransformFunc
	if t != nil {
		stored = func(obj any) (any, error) {
			if i.lister.transformed(obj) {
				return obj, nil
			}
			return t(obj)
		}
	}
	if err := i.SharedIndexInformer.SetTransform(stored); err != nil {
		return err
	}
	i.lister.transform = t
	return nil
}

// pagedLister lists in pages of PageSize, transforming each page's
// objects, and tells client-go's reflector that it does not serve
// watch-list semantics, so the reflector lists and then watches.
type pagedLister struct {
	lw toolscache.ListerWatcherWithContext
	// transform is set before the informer runs (SetTransform).
	transform toolscache.TransformFunc

	mu sync.Mutex
	// done holds the objects the last list transformed until the informer
	// stores them (the reflector hands a list's objects to the store's
	// Replace as they are, and each goes through the store's transform
	// once); a list drops what the one before it left.
	done map[any]struct{}
}

// transformed reports whether the last list transformed obj, which the
// store then takes as it is.
func (p *pagedLister) transformed(obj any) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.done[obj]; ok {
		delete(p.done, obj)
		return true
	}
	return false
}

// IsWatchListSemanticsUnSupported is how a ListerWatcher turns client-go's
// watch-list off for its reflector (k8s.io/client-go/util/watchlist).
func (p *pagedLister) IsWatchListSemanticsUnSupported() bool { return true }

func (p *pagedLister) List(o metav1.ListOptions) (runtime.Object, error) {
	return p.ListWithContext(context.Background(), o)
}

func (p *pagedLister) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return p.lw.WatchWithContext(context.Background(), o)
}

func (p *pagedLister) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return p.lw.WatchWithContext(ctx, o)
}

// ListWithContext lists every object o selects. The reflector's first list
// asks for resourceVersion "0", which the API server answers from its watch
// cache whole, whatever the limit; it is made a consistent read ("") here,
// which the API server also serves from its watch cache (consistent reads
// from the cache, Kubernetes 1.31 on) and in pages (snapshots, 1.34 on). A
// list at a given resourceVersion (a relist) is passed on as asked. The
// objects come back as a metav1.List of the objects themselves, so the
// store sees the very objects transformed here.
func (p *pagedLister) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	if o.ResourceVersion == "0" {
		o.ResourceVersion = ""
	}
	if o.ResourceVersion == "" && o.ResourceVersionMatch == "" {
		o.Limit = PageSize
	}
	done := map[any]struct{}{}
	p.mu.Lock()
	p.done = nil
	p.mu.Unlock()
	out := &metav1.List{}
	for first := true; ; first = false {
		page, err := p.lw.ListWithContext(ctx, o)
		if err != nil {
			return nil, err
		}
		objs, err := meta.ExtractListWithAlloc(page)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if p.transform != nil {
				t, err := p.transform(obj)
				if err != nil {
					return nil, err
				}
				ro, ok := t.(runtime.Object)
				if !ok {
					return nil, fmt.Errorf("cache transform returned %T for %T", t, obj)
				}
				obj = ro
				done[obj] = struct{}{}
			}
			out.Items = append(out.Items, runtime.RawExtension{Object: obj})
		}
		lm, err := meta.ListAccessor(page)
		if err != nil {
			return nil, err
		}
		if first {
			out.ResourceVersion = lm.GetResourceVersion()
		}
		next := lm.GetContinue()
		if next == "" || o.Limit == 0 {
			break
		}
		o.Continue = next
		// A page after the first is asked for by its token alone.
		o.ResourceVersion = ""
	}
	p.mu.Lock()
	p.done = done
	p.mu.Unlock()
	return out, nil
}
