package objects

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Field index names.
const (
	// IndexBucketyRef indexes BucketyAccess by spec.bucketyRef.name.
	IndexBucketyRef = "spec.bucketyRef.name"
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
		return []string{o.(*v1.BucketyAccess).Spec.BucketyRef.Name}
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
	return idx.IndexField(ctx, &v1.BucketyCredential{}, IndexCredentialOwner, func(o client.Object) []string {
		if uid := o.GetLabels()[v1.ClaimOwnerLabel]; uid != "" {
			return []string{uid}
		}
		return nil
	})
}
