// Package labeller gives the shard slot label (internal/shard) to the
// objects that lack it: those written before the installation ran shards,
// and a tenant's new Buckety or BucketyAccess, which no shard's cache
// holds until it is labelled; and to those whose value no shard's cache
// selects (shard.ValidValue: the empty value too, which a tenant's
// metadata-only update could once set past the webhook), which would
// otherwise be hidden from every shard. It runs in shard 0's manager.
package labeller

import (
	"context"
	"fmt"

	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/runtime/pagedcache"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// Labeller watches the objects without the slot label, or with a value no
// shard reads (shard.Unserved), and labels them.
// A Buckety or access not being deleted gets buckety's finalizer in the
// same patch, as its first pass would add it: a new object under shards
// costs no extra write.
type Labeller struct {
	// Config reaches the API server; Scheme knows buckety's kinds.
	Config *rest.Config
	Scheme *runtime.Scheme
	// Client writes the patches.
	Client client.Client
	Log    logr.Logger
}

// item is one object to label: its kind (an index into kinds) and key.
type item struct {
	kind int
	key  client.ObjectKey
}

// kinds are what the Labeller watches; a Secret only if buckety's.
func kinds() []client.Object {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return []client.Object{&v1.Buckety{}, &v1.BucketyAccess{}, &v1.BucketyClaim{}, &v1.BucketyCredential{}, secret}
}

// Start watches and labels until ctx ends (manager.Runnable).
func (l *Labeller) Start(ctx context.Context) error {
	// Selected by the API server: the watches carry only the objects to
	// label, as they did when only a missing label was selected (a
	// "notin" requirement also selects the objects without the label).
	unserved, err := shard.Unserved()
	if err != nil {
		return err
	}
	managed, err := labels.NewRequirement(v1.ManagedByLabel, selection.Equals, []string{v1.ManagedByValue})
	if err != nil {
		return err
	}
	ks := kinds()
	c, err := cache.New(l.Config, cache.Options{
		Scheme:               l.Scheme,
		NewInformer:          pagedcache.NewInformer,
		DefaultLabelSelector: unserved,
		ByObject:             map[client.Object]cache.ByObject{ks[len(ks)-1]: {Label: unserved.Add(*managed)}},
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return err
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]())
	defer q.ShutDown()
	for i, k := range ks {
		inf, err := c.GetInformer(ctx, k)
		if err != nil {
			return err
		}
		enqueue := func(obj any) {
			if o, ok := obj.(client.Object); ok {
				q.Add(item{kind: i, key: client.ObjectKeyFromObject(o)})
			}
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }}); err != nil {
			return err
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("labeller: caches did not sync: %w", <-errc)
	}
	l.labelInOrder(ctx, c, ks)
	for range 4 {
		go l.work(ctx, c, q, ks)
	}
	<-ctx.Done()
	return <-errc
}

// dependentsFirst is the order labelInOrder labels the kinds of kinds()
// in: what a pass of a Buckety or an access reads (credential records,
// claims, Secrets) before the Bucketies and accesses themselves.
var dependentsFirst = []int{3, 2, 4, 0, 1}

// labelInOrder labels what the caches hold at the start, one kind at a
// time in dependentsFirst's order, each kind done before the next. An
// access from before shards must reach its shard after the record of the
// credential its Secret holds: the shard's pass would otherwise find no
// record and issue a new credential in its place (the access pass also
// checks the API server before it does, for a watch that lags). What
// fails here is left to the queue, which holds every object as well.
func (l *Labeller) labelInOrder(ctx context.Context, c cache.Cache, ks []client.Object) {
	for _, i := range dependentsFirst {
		list, err := listOf(l.Scheme, ks[i])
		if err == nil {
			err = c.List(ctx, list)
		}
		if err != nil {
			l.Log.Info("could not list objects without a shard slot label; the queue labels them", "kind", fmt.Sprintf("%T", ks[i]), "error", err.Error())
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			continue
		}
		work := make(chan client.Object)
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for o := range work {
					if err := l.label(ctx, c, ks[i].DeepCopyObject().(client.Object), client.ObjectKeyFromObject(o)); err != nil && !apierrors.IsNotFound(err) {
						l.Log.Info("could not give an object its shard slot label; the queue retries", "object", client.ObjectKeyFromObject(o).String(), "error", err.Error())
					}
				}
			}()
		}
		for _, it := range items {
			if o, ok := it.(client.Object); ok {
				work <- o
			}
		}
		close(work)
		wg.Wait()
		if ctx.Err() != nil {
			return
		}
	}
}

// listOf is the list type of obj's kind.
func listOf(scheme *runtime.Scheme, obj client.Object) (client.ObjectList, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(m.GroupVersionKind().GroupVersion().WithKind(m.GroupVersionKind().Kind + "List"))
		return list, nil
	}
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	o, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	list, ok := o.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("%s is not a list", gvk.Kind+"List")
	}
	return list, nil
}

func (l *Labeller) work(ctx context.Context, c cache.Cache, q workqueue.TypedRateLimitingInterface[item], ks []client.Object) {
	for {
		it, shutdown := q.Get()
		if shutdown {
			return
		}
		err := l.label(ctx, c, ks[it.kind].DeepCopyObject().(client.Object), it.key)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			q.Forget(it)
		default:
			l.Log.Info("could not give an object its shard slot label; retrying", "object", it.key.String(), "error", err.Error())
			q.AddRateLimited(it)
		}
		q.Done(it)
		if ctx.Err() != nil {
			return
		}
	}
}

// label gives the object at key (read into obj) its slot label, in place
// of a value no shard reads.
func (l *Labeller) label(ctx context.Context, c client.Reader, obj client.Object, key client.ObjectKey) error {
	if err := c.Get(ctx, key, obj); err != nil {
		return err
	}
	if v, ok := obj.GetLabels()[shard.SlotLabel]; ok && shard.ValidValue(v) {
		return nil
	}
	var value string
	switch o := obj.(type) {
	case *v1.Buckety:
		value = shard.BucketyValue(o)
	case *v1.BucketyAccess:
		value = shard.AccessValue(o)
	case *v1.BucketyClaim:
		value = shard.SlotValue(o.Spec.Owner.Namespace)
	case *v1.BucketyCredential:
		value = shard.SlotValue(o.Spec.Owner.Namespace)
	default:
		value = shard.SlotValue(obj.GetNamespace())
	}
	switch obj.(type) {
	case *v1.Buckety, *v1.BucketyAccess:
		if obj.GetDeletionTimestamp().IsZero() {
			return objects.AddFinalizer(ctx, l.Client, obj, value)
		}
	}
	before := obj.DeepCopyObject().(client.Object)
	lb := obj.GetLabels()
	if lb == nil {
		lb = map[string]string{}
	}
	lb[shard.SlotLabel] = value
	obj.SetLabels(lb)
	if _, ok := obj.(*v1.BucketyClaim); ok {
		// Claims are updated whole, under their resourceVersion, as the
		// claim store does (the controller may not patch them).
		return l.Client.Update(ctx, obj)
	}
	return l.Client.Patch(ctx, obj, client.MergeFrom(before))
}
