package objects

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestTrimmedMarkerCannotComeFromTheAPIServer: the marker the cache puts
// on an object whose finalizers it trimmed is not a valid annotation key,
// so no object the API server holds carries it: a tenant cannot set it to
// steer AddFinalizer or RemoveFinalizer (a cache that keeps annotations,
// the shard labeller's, would hand it on), and a write carrying it by
// mistake is refused.
func TestTrimmedMarkerCannotComeFromTheAPIServer(t *testing.T) {
	if errs := validation.IsQualifiedName(trimmedAnnotation); len(errs) == 0 {
		t.Errorf("want %q refused as an annotation key by the API server", trimmedAnnotation)
	}
	forged := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"buckety.yolean.se/cached-finalizer-index": "-1"}}}
	if _, ok := TrimmedFinalizer(forged); ok {
		t.Error("a tenant's look-alike annotation: want it ignored")
	}
	many := make([]string, MaxCachedFinalizers+1)
	for i := range many {
		many[i] = "example.com/x"
	}
	many[3] = v1.Finalizer
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Finalizers: many}}
	TrimFinalizers(b)
	if at, ok := TrimmedFinalizer(b); !ok || at != 3 || len(b.Finalizers) != 1 {
		t.Errorf("want buckety's alone kept and its place 3 marked, got %v %d %v", b.Finalizers, at, ok)
	}
}
