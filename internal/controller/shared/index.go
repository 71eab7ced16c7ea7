package shared

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Field index names.
const (
	// IndexBucketyRef indexes BucketyAccess by spec.bucketyRef.name.
	IndexBucketyRef = "spec.bucketyRef.name"
	// IndexNameConflict indexes Bucketies whose Ready reason is NameConflict,
	// so a released claim can wake the ones waiting for a name.
	IndexNameConflict = "status.nameConflict"
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
	return idx.IndexField(ctx, &v1.Buckety{}, IndexNameConflict, func(o client.Object) []string {
		if c := meta.FindStatusCondition(o.(*v1.Buckety).Status.Conditions, v1.ConditionReady); c != nil && c.Reason == v1.ReasonNameConflict {
			return []string{"true"}
		}
		return nil
	})
}
