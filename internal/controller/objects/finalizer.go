package objects

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// AddFinalizer adds buckety's finalizer with a merge patch when missing.
func AddFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	if controllerutil.ContainsFinalizer(obj, v1.Finalizer) {
		return nil
	}
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, v1.Finalizer)
	return c.Patch(ctx, obj, client.MergeFrom(before))
}

// RemoveFinalizer releases buckety's finalizer with a merge patch; an object
// already gone is fine.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object) error {
	before := obj.DeepCopyObject().(client.Object)
	controllerutil.RemoveFinalizer(obj, v1.Finalizer)
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFrom(before)))
}
