package controller_test

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestSecretTheCacheLagsIsReadNotCreatedAgain: a pass that finds no Secret
// in the cache although this controller wrote it (the cache has not caught
// up with its own create) reads it fresh, and sends no create the API
// server would refuse; a Secret its tenant deleted is still created again.
func TestSecretTheCacheLagsIsReadNotCreatedAgain(t *testing.T) {
	var lag atomic.Bool
	var creates, fresh atomic.Int32
	e := newEnvWith(t, "", func(c client.WithWatch) (client.Client, client.Reader) {
		cached := interceptor.NewClient(c, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if m, ok := obj.(*metav1.PartialObjectMetadata); ok && m.Kind == "Secret" && lag.Load() {
					return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
				}
				return c.Get(ctx, key, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					creates.Add(1)
				}
				return c.Create(ctx, obj, opts...)
			},
		})
		api := interceptor.NewClient(c, interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.Secret); ok {
					fresh.Add(1)
				}
				return c.Get(ctx, key, obj, opts...)
			},
		})
		return cached, api
	})
	b := newBuckety("a", "orders", "orders")
	b.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "orders-creds"}
	e.create(b)
	for i := 0; i < 4; i++ {
		e.reconcile("a", "orders")
		e.reconcileAccess("a", "orders")
	}
	e.wantReady(e.buckety("a", "orders"), metav1.ConditionTrue, v1.ReasonReconciled)
	if n := creates.Load(); n != 1 {
		t.Fatalf("want the Secret created once, got %d creates", n)
	}

	lag.Store(true)
	c0, f0 := creates.Load(), fresh.Load()
	e.reconcileAccess("a", "orders")
	if c, f := creates.Load()-c0, fresh.Load()-f0; c != 0 || f != 1 {
		t.Errorf("a pass the cache lags: want no create and one fresh read, got %d creates and %d fresh reads", c, f)
	}

	lag.Store(false)
	s := &corev1.Secret{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "orders-creds"}, s); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	c0 = creates.Load()
	e.reconcileAccess("a", "orders")
	if c := creates.Load() - c0; c != 1 {
		t.Errorf("a Secret its tenant deleted: want it created again, got %d creates", c)
	}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "a", Name: "orders-creds"}, s); err != nil {
		t.Errorf("the deleted Secret was not written again: %v", err)
	}
}
