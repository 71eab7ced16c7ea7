package objects

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// AddFinalizer adds buckety's finalizer, and sets the shard slot label to
// slot, with one merge patch when either is missing or differs: a new
// object gets both in the write that adds the finalizer, and one written
// before shards (or whose sharing changed) gets its label once.
func AddFinalizer(ctx context.Context, c client.Client, obj client.Object, slot string) error {
	if FinalizerSet(obj, slot) {
		return nil
	}
	if at, ok := TrimmedFinalizer(obj); ok && at < 0 {
		// The cache holds none of the object's many finalizers: a merge
		// patch of the list would replace them all. Appended instead.
		p := fmt.Sprintf(`[{"op":"add","path":"/metadata/finalizers/-","value":%q}]`, v1.Finalizer)
		if err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, []byte(p))); err != nil {
			return err
		}
		TrimFinalizers(obj)
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, v1.Finalizer)
	shard.SetLabel(obj, slot)
	return c.Patch(ctx, obj, client.MergeFrom(before))
}

// FinalizerSet reports whether obj has buckety's finalizer and the shard
// slot label slot: whether AddFinalizer has nothing to write.
func FinalizerSet(obj client.Object, slot string) bool {
	return controllerutil.ContainsFinalizer(obj, v1.Finalizer) && obj.GetLabels()[shard.SlotLabel] == slot
}

// RemoveFinalizer releases buckety's finalizer with a merge patch; an object
// already gone is fine.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if at, ok := TrimmedFinalizer(obj); ok {
		if at < 0 {
			return nil
		}
		// Removed by its place in the list the cache did not keep, only
		// while it is still there: a list changed since fails the test,
		// and the pass is retried on the object as it is now.
		p := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, at, v1.Finalizer, at)
		return client.IgnoreNotFound(c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, []byte(p))))
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, v1.Finalizer)
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFrom(before)))
}

// MaxCachedFinalizers is the most finalizers the controller's cache keeps
// of a Buckety or an access. A tenant may give an object hundreds of
// thousands (the API server refuses no duplicate): kept, each object cost
// MiBs in every replica's cache, and a few dozen ran them out of memory.
// Of an object with more, the cache keeps only buckety's own and where it
// stands in the list (TrimFinalizers), and AddFinalizer and
// RemoveFinalizer patch the list by position, never replacing it.
const MaxCachedFinalizers = 16

// trimmedAnnotation marks an object the cache trimmed, with the place of
// buckety's finalizer in its full list (-1: absent). The cache keeps no
// annotation of a Buckety or an access otherwise; it is never written. Its
// key is not a valid annotation key (the spaces), so no object the API
// server holds can carry it: a tenant cannot set it to steer
// AddFinalizer on a cache that keeps annotations (the shard labeller's),
// and a write that carried it by mistake would be refused, not stored.
const trimmedAnnotation = "buckety.yolean.se/cached finalizer index"

// TrimFinalizers is the cache's transform of an object's finalizers (see
// MaxCachedFinalizers). It sets the object's annotations: call it after
// they were stripped.
func TrimFinalizers(o client.Object) {
	f := o.GetFinalizers()
	if len(f) <= MaxCachedFinalizers {
		return
	}
	at := slices.Index(f, v1.Finalizer)
	var kept []string
	if at >= 0 {
		kept = []string{v1.Finalizer}
	}
	o.SetFinalizers(kept)
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[trimmedAnnotation] = strconv.Itoa(at)
	o.SetAnnotations(a)
}

// TrimmedFinalizer reports whether the cache trimmed obj's finalizers,
// and the place of buckety's in the full list (-1: absent).
func TrimmedFinalizer(obj client.Object) (int, bool) {
	v, ok := obj.GetAnnotations()[trimmedAnnotation]
	if !ok {
		return 0, false
	}
	at, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return at, true
}
