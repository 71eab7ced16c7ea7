package objects

import (
	"context"

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
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, v1.Finalizer)
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[shard.SlotLabel] = slot
	obj.SetLabels(l)
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
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, v1.Finalizer)
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFrom(before)))
}
