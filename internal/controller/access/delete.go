package access

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
)

// reconcileDelete revokes what Grant minted, deletes the Secret and
// releases the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, a *v1.BucketyAccess, f *facts) (reconcile.Result, error) {
	f.deleting = true
	if !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
		return reconcile.Result{}, nil
	}
	if a.Status.Principal != "" {
		// Something was minted on the backend: revoking it must succeed.
		b := &v1.Buckety{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.BucketyRef.Name}, b); err != nil {
			return reconcile.Result{}, fmt.Errorf("revoke %s: get Buckety: %w", a.Status.Principal, err)
		}
		e, problem := shared.Resolve(r.Backends, b.Spec.Backend, shared.Sticky{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor})
		if problem != nil {
			f.problem = problem
			return reconcile.Result{RequeueAfter: shared.Jitter(r.Recheck)}, nil
		}
		// The resource is the claim's, never status.backendResourceName,
		// which a tenant with status access could point at another
		// resource. No claim (the Buckety never settled one): the
		// principal is revoked wherever it has rights (Resource empty).
		var resource string
		owned, err := r.Claims.Owned(ctx, b.UID)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("revoke %s: %w", a.Status.Principal, err)
		}
		for _, cl := range owned {
			if cl.Spec.Backend == e.Name && cl.Spec.Phase != v1.ClaimClaimed {
				resource = cl.Spec.ResourceName
			}
		}
		if err := e.Backend.Revoke(ctx, drivers.Access{Resource: resource, Namespace: a.Namespace, Name: a.Name, Role: string(a.Spec.Role), Parameters: a.Spec.Parameters}); err != nil {
			f.Record(err)
			return reconcile.Result{}, fmt.Errorf("revoke %s: %w", a.Status.Principal, err)
		}
	}
	s := secretMeta()
	key := types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName}
	err := r.Client.Get(ctx, key, s)
	if apierrors.IsNotFound(err) {
		// A Secret written moments ago (or just before an API server
		// restart) may not be cached yet: ask the API server before
		// concluding there is nothing to delete.
		err = r.APIReader.Get(ctx, key, s)
	}
	switch {
	case err == nil && ownsSecret(a, s):
		if err := r.Client.Delete(ctx, s, ctrl.Preconditions{UID: &s.UID}); ctrl.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	case err != nil && !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	r.verified.forget(a.UID)
	if r.Backoff != nil {
		r.Backoff.Reset(a.UID)
	}
	return reconcile.Result{}, shared.RemoveFinalizer(ctx, r.Client, a)
}
