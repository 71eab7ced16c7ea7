package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/naming"
	"github.com/Yolean/buckety-controller/internal/runtime/pagedcache"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// cacheOptions limits the informer cache to what the reconcilers read, in
// the form they read it. What a tenant can create must not make the
// controller's memory grow without bound: every object a tenant writes is
// reduced, before it is stored, to a size the API bounds, whatever the
// tenant put in it.
//
//   - Secrets: only those labelled as buckety's (a label a tenant can put
//     on any Secret too), and of those only metadata, through a metadata
//     informer (the access controller watches them with
//     builder.OnlyMetadata and reads them as PartialObjectMetadata): name,
//     UID, resourceVersion, buckety's two labels and the controlling owner
//     reference. A Secret's data is read fresh from the API server only
//     where buckety writes or checks it (access.Reconciler).
//   - Bucketies and BucketyAccesses: stored without annotations, without
//     owner references other than the controlling one, and with only the
//     labels buckety reads (the labels spec.name's template references;
//     the implicit-access label; the shard slot label). spec.parameters
//     is bounded by the CRD (v1alpha1.MaxParameters keys of
//     v1alpha1.MaxParameterValueLength).
//   - Every cached object is stored without metadata.managedFields, and,
//     except on claims, without kubectl's last-applied-configuration
//     annotation.
//   - What is left shares what repeats across objects: strings, maps and
//     right-sized slices (compact).
//   - Informers fill by lists in pages, each page transformed as it is
//     read, not by watch-list streams (internal/runtime/pagedcache).
//
// Writes are unaffected: metadata and status are merge-patched as the
// difference between two cached copies, so the stripped fields are in
// neither and the patch never mentions them (finalizers are kept whole,
// since a merge patch replaces the list); claims, the one kind updated
// whole (optimistic lock), keep their labels and annotations, and tenants
// cannot write claims. Events and Leases are not cached; Namespaces are,
// once a backend's limits.namespaces selects by label (stored without
// managedFields and last-applied-configuration).
func cacheOptions() ctrlcache.Options {
	return ctrlcache.Options{
		NewInformer:      pagedcache.NewInformer,
		DefaultTransform: stripForCache,
		ByObject: map[client.Object]ctrlcache.ByObject{
			&corev1.Secret{}: {
				Label:     shard.Managed(),
				Transform: stripSecret,
			},
		},
	}
}

// listedAtStart are the informers a cache of the controllers' starts with
// (wire), in the form the controllers read them (buckety's Secrets as
// metadata), so that every first list runs at once; a shard's warm cache
// (warmCaches) starts the same ones. An informer of another kind a
// controller asks for (Namespaces, where a backend limits namespaces by
// label) starts when it asks.
func listedAtStart() []client.Object {
	secrets := &metav1.PartialObjectMetadata{}
	secrets.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return []client.Object{&v1.Buckety{}, &v1.BucketyAccess{}, &v1.BucketyClaim{}, &v1.BucketyCredential{}, secrets}
}

// objectTransform makes steps (a strip, then compact) a cache transform:
// it runs on the informer's goroutine before an object is stored, on
// objects the informer owns, so steps may change them in place. A deletion tombstone is
// unwrapped; anything that is not an object passes through.
func objectTransform(steps ...func(client.Object)) func(any) (any, error) {
	var t func(any) (any, error)
	t = func(obj any) (any, error) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			o, err := t(d.Obj)
			d.Obj = o
			return d, err
		}
		if o, ok := obj.(client.Object); ok {
			o.SetManagedFields(nil)
			for _, step := range steps {
				step(o)
			}
		}
		return obj, nil
	}
	return t
}

// stripForCache is the cache's transform (see cacheOptions).
var stripForCache = objectTransform(stripFields, compact)

// stripFields removes what the reconcilers do not read (and trims a
// Buckety's or an access's finalizers past objects.MaxCachedFinalizers).
func stripFields(o client.Object) {
	switch t := o.(type) {
	case *v1.BucketyClaim:
	case *v1.Buckety:
		o.SetAnnotations(nil)
		o.SetOwnerReferences(nil)
		o.SetLabels(keep(o.GetLabels(), append(templateLabels(t.Spec.Name), shard.SlotLabel)...))
		objects.TrimFinalizers(o)
	case *v1.BucketyAccess:
		o.SetAnnotations(nil)
		o.SetOwnerReferences(controllerOnly(o.GetOwnerReferences()))
		o.SetLabels(keep(o.GetLabels(), v1.ImplicitLabel, shard.SlotLabel))
		objects.TrimFinalizers(o)
	default:
		if a := o.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
			o.SetAnnotations(a)
		}
	}
}

// lastApplied is the annotation kubectl apply (client-side) keeps the whole
// applied object in.
const lastApplied = corev1.LastAppliedConfigAnnotation

// stripSecret is the Secrets' transform: whatever reaches the cache (the
// metadata informer's PartialObjectMetadata, or a full Secret should a
// reader ever ask for one) is reduced to what ownership checks read. A full
// Secret keeps no data: the access controller reads data fresh.
var stripSecret = objectTransform(stripSecretFields, compact)

// stripSecretFields reduces a Secret to what ownership checks read.
func stripSecretFields(o client.Object) {
	o.SetAnnotations(nil)
	o.SetFinalizers(nil)
	o.SetOwnerReferences(controllerOnly(o.GetOwnerReferences()))
	o.SetLabels(keep(o.GetLabels(), v1.ManagedByLabel, v1.AccessLabel, shard.SlotLabel))
	if s, ok := o.(*corev1.Secret); ok {
		s.Data, s.StringData = nil, nil
	}
}

// keep returns the labels among keys, or nil.
func keep(l map[string]string, keys ...string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := l[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}

// templateLabels are the label keys a spec.name template references.
func templateLabels(tmpl string) []string {
	if tmpl == "" {
		return nil
	}
	t, err := naming.Parse(tmpl)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range t.Refs() {
		if r.Kind == naming.Label {
			out = append(out, r.Key)
		}
	}
	return out
}

// controllerOnly keeps the controlling owner reference, if any.
func controllerOnly(refs []metav1.OwnerReference) []metav1.OwnerReference {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller {
			return []metav1.OwnerReference{r}
		}
	}
	return nil
}
