package access

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// reconcileDelete revokes what Grant issued, deletes the Secret and
// releases the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, a *v1.BucketyAccess, f *facts) (reconcile.Result, error) {
	f.deleting = true
	if !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
		return reconcile.Result{}, nil
	}
	// Every principal recorded for the access is revoked (its rights,
	// then the principal) before its Secret and the finalizer go; one
	// that cannot be revoked keeps the finalizer, retried on backoff.
	if done, err := r.revokeAll(ctx, a, f); err != nil || !done {
		if err == nil {
			return reconcile.Result{RequeueAfter: retry.Jitter(r.Recheck)}, nil
		}
		return reconcile.Result{}, err
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
	r.secrets.forget(a.UID)
	r.gates.settle(a.UID)
	if r.Backoff != nil {
		r.Backoff.Reset(a.UID)
	}
	return reconcile.Result{}, objects.RemoveFinalizer(ctx, r.Client, a)
}
