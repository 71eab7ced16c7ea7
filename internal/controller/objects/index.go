package objects

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Field index names.
const (
	// IndexBucketyRef indexes BucketyAccess by each Buckety it names, as
	// RefKey (namespace/name): query it across namespaces, since an access
	// may name a Buckety another namespace shares.
	IndexBucketyRef = "spec.bucketyRef"
	// IndexClaimBackendNamespace indexes BucketyClaims by backend and owner
	// namespace (BackendNamespace), to count a namespace's claims against
	// the backend's limits.perNamespace.
	IndexClaimBackendNamespace = "spec.backend+spec.owner.namespace"
	// IndexClaimOwner indexes BucketyClaims by spec.owner.uid: a Buckety's
	// claims, read on every pass. Claims are cluster-scoped, so a label
	// selector alone would test every claim in the cache on each read:
	// quadratic in the number of Bucketies.
	IndexClaimOwner = "spec.owner.uid"
	// IndexCredentialOwner indexes BucketyCredentials by their owning
	// access's UID (the v1.ClaimOwnerLabel label), for the same reason.
	IndexCredentialOwner = "metadata.labels.owner-uid"
	// IndexCredentialOwnerName indexes BucketyCredentials by their
	// owning access's namespace/name (RefKey), to find those of an
	// access that is gone, whose UID a reconcile of its name does not
	// know.
	IndexCredentialOwnerName = "spec.owner.namespace+name"
	// IndexClaimRecordUnmarked indexes the BucketyClaims whose retained
	// record says the owner record on the backend is not marked yet
	// (spec.retained.recordUnmarked), under "true": the record marker's
	// look each interval reads those, not every claim of its shards.
	IndexClaimRecordUnmarked = "spec.retained.recordUnmarked"
)

// BackendNamespace is the IndexClaimBackendNamespace value of claims on
// backend owned in namespace.
func BackendNamespace(backend, namespace string) string { return backend + "/" + namespace }

// Indexer is the part of a manager that registers field indexes.
type Indexer interface {
	IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error
}

// SetupIndexes registers the field indexes the reconcilers query.
func SetupIndexes(ctx context.Context, idx Indexer) error {
	if err := idx.IndexField(ctx, &v1.BucketyAccess{}, IndexBucketyRef, func(o client.Object) []string {
		return RefKeys(o.(*v1.BucketyAccess))
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1.BucketyClaim{}, IndexClaimBackendNamespace, func(o client.Object) []string {
		cl := o.(*v1.BucketyClaim)
		return []string{BackendNamespace(cl.Spec.Backend, cl.Spec.Owner.Namespace)}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1.BucketyClaim{}, IndexClaimOwner, func(o client.Object) []string {
		return []string{o.(*v1.BucketyClaim).Spec.Owner.UID}
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1.BucketyClaim{}, IndexClaimRecordUnmarked, func(o client.Object) []string {
		if r := o.(*v1.BucketyClaim).Spec.Retained; r != nil && r.RecordUnmarked {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1.BucketyCredential{}, IndexCredentialOwner, func(o client.Object) []string {
		if uid := o.GetLabels()[v1.ClaimOwnerLabel]; uid != "" {
			return []string{uid}
		}
		return nil
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &v1.BucketyCredential{}, IndexCredentialOwnerName, func(o client.Object) []string {
		owner := o.(*v1.BucketyCredential).Spec.Owner
		return []string{RefKey(owner.Namespace, owner.Name)}
	})
}

// RefKey is the IndexBucketyRef value of Buckety ns/name.
func RefKey(ns, name string) string { return ns + "/" + name }

// RefKeys are the IndexBucketyRef values of access a: the RefKey of each
// Buckety it names.
func RefKeys(a *v1.BucketyAccess) []string {
	refs := a.Refs()
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = RefKey(a.RefNamespace(r), r.Name)
	}
	return out
}

// AccessesOf lists the live and deleting BucketyAccesses that name Buckety
// ns/name, of every namespace, from the cache. opts add list options (such
// as client.UnsafeDisableDeepCopy).
func AccessesOf(ctx context.Context, c client.Reader, ns, name string, opts ...client.ListOption) ([]v1.BucketyAccess, error) {
	var list v1.BucketyAccessList
	if err := c.List(ctx, &list, append([]client.ListOption{client.MatchingFields{IndexBucketyRef: RefKey(ns, name)}}, opts...)...); err != nil {
		return nil, fmt.Errorf("list the accesses of Buckety %s/%s: %w", ns, name, err)
	}
	return list.Items, nil
}

// ClusterWide is the Indexer of the controller's informer cache: it keeps
// only the key controller-runtime's cache looks up for a field query across
// namespaces. controller-runtime's own IndexField keeps each value of a
// namespaced object twice, under its namespace and under every namespace,
// each its own set in the informer's index: for IndexBucketyRef, whose
// values are one access each, about 300 bytes per access never read,
// since every query of these indexes is across namespaces (a namespaced
// query of them would find nothing). Cluster-scoped kinds (claims) are
// indexed as IndexField indexes them.
//
// It depends on how controller-runtime names an index and its keys
// ("field:" + field, "__all_namespaces/" + value, in
// pkg/cache/internal/cache_reader.go): every reconcile that reads a
// Buckety's accesses or its claims goes through these indexes, so a
// controller-runtime that changed them fails the integration tests at
// once.
type ClusterWide struct {
	Cache interface {
		GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
	}
}

// IndexField adds an index of field to obj's informer, with only the
// across-namespaces key of each value.
func (c ClusterWide) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	inf, err := c.Cache.GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	return inf.AddIndexers(toolscache.Indexers{"field:" + field: func(raw any) ([]string, error) {
		o, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", raw)
		}
		vals := extract(o)
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = "__all_namespaces/" + v
		}
		return out, nil
	}})
}
