package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// lastApplied is the annotation kubectl apply (client-side) keeps the whole
// applied object in.
const lastApplied = corev1.LastAppliedConfigAnnotation

// cacheOptions limits the informer cache to what the reconcilers read, in
// the form they read it.
//
//   - Secrets: only buckety's own (by label), never every Secret in the
//     cluster; a Secret missing from the cache is read fresh where it
//     matters (access.Reconciler).
//   - Every cached object is stored without metadata.managedFields (which
//     server-side field tracking puts on every object and which is often
//     larger than the object's spec and status together) and, except on
//     claims, without kubectl's last-applied-configuration annotation (a
//     second copy of the applied spec). Nothing buckety does reads either.
//     Writes are unaffected: metadata and status are merge-patched as the
//     difference between two cached copies, so the stripped fields are in
//     neither and the patch never mentions them; claims, the one kind
//     updated whole (optimistic lock), keep their annotations, and an
//     update that omits managedFields leaves the server's as they are.
//
// Events, Leases and Namespaces are not cached: the event recorder and the
// leader elector write through the API, and no reconciler reads them.
func cacheOptions() ctrlcache.Options {
	return ctrlcache.Options{
		DefaultTransform: stripForCache,
		ByObject: map[client.Object]ctrlcache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{v1.ManagedByLabel: v1.ManagedByValue})},
		},
	}
}

// stripForCache is the cache's transform (see cacheOptions). It runs on the
// informer's goroutine before the object is stored, on objects the informer
// owns, so it may change them in place.
func stripForCache(obj any) (any, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		o, err := stripForCache(d.Obj)
		d.Obj = o
		return d, err
	}
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil
	}
	o.SetManagedFields(nil)
	if _, claim := o.(*v1.BucketyClaim); !claim {
		if a := o.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
			o.SetAnnotations(a)
		}
	}
	return o, nil
}
