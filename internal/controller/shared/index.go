package shared

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Field index names.
const (
	// IndexBucketyRef indexes BucketyAccess by spec.bucketyRef.name.
	IndexBucketyRef = "spec.bucketyRef.name"
	// IndexClaim indexes stamped Bucketies by their claim key
	// (status.backend/status.backendResourceName).
	IndexClaim = "status.claim"
)

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
	return idx.IndexField(ctx, &v1.Buckety{}, IndexClaim, func(o client.Object) []string {
		b := o.(*v1.Buckety)
		if b.Status.Provenance == "" || b.Status.BackendResourceName == "" {
			return nil
		}
		return []string{ClaimKey(b.Status.Backend, b.Status.BackendResourceName)}
	})
}
