package admission

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestCounterCountsSeveralWhoseFirstIsGone: an access naming several
// Bucketies whose first (another namespace's) is gone still holds its
// grant on the rest: the webhook counts it on their backend. Counted by
// its first Buckety's backend alone, it counted nowhere.
func TestCounterCountsSeveralWhoseFirstIsGone(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	orders := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "orders"}, Spec: v1.BucketySpec{Backend: "kafka"}}
	several := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "several"},
		Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Namespace: "a", Name: "gone"}, {Name: "orders"}}, CredentialsSecretName: "several"}}
	count := CacheAccessCounter(fake.NewClientBuilder().WithScheme(scheme).WithObjects(orders, several).Build())
	perBuckety, onBackend, err := count(context.Background(), "o", RefKey("o", "orders"), "kafka")
	if err != nil {
		t.Fatal(err)
	}
	if perBuckety != 1 || onBackend != 1 {
		t.Errorf("want o/several counted on o/orders and on backend kafka, got %d and %d", perBuckety, onBackend)
	}
}
