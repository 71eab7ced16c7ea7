package access

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
//
// It revokes and deletes whether or not buckety's finalizer is still on
// the access. A tenant may take it off (finalizers are theirs to edit) and
// hold the access with a finalizer of their own while it is deleted: an
// access that is never gone, whose passes once ended here at once, kept
// its credential for good, past its Buckety's owner withdrawing the
// sharing, past the access limits (an access being deleted counts against
// none), and out of the orphan check's sight (its access still there).
func (r *Reconciler) reconcileDelete(ctx context.Context, a *v1.BucketyAccess, f *facts) (reconcile.Result, error) {
	f.deleting = true
	// Every principal recorded for the access is revoked (its rights,
	// then the principal) before its Secret and the finalizer go; one
	// that cannot be revoked keeps the finalizer, retried on backoff.
	if done, err := r.revokeAll(ctx, a, f); err != nil || !done {
		if err == nil {
			return reconcile.Result{RequeueAfter: retry.Jitter(r.Recheck)}, nil
		}
		return reconcile.Result{}, err
	}
	if err := r.deleteOwnSecret(ctx, a, true); err != nil {
		return reconcile.Result{}, err
	}
	r.verified.forget(a.UID)
	r.secrets.forget(a.UID)
	r.gates.settle(a.UID)
	if r.Backoff != nil {
		r.Backoff.Reset(a.UID)
	}
	if !controllerutil.ContainsFinalizer(a, v1.Finalizer) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, objects.RemoveFinalizer(ctx, r.Client, a)
}

// deleteOwnSecret deletes the access's Secret if buckety wrote it for
// this access (ownsSecret); a Secret of anyone else's is never touched.
// confirm asks the API server when the cache shows none, or shows one
// that is not this access's: a Secret written moments ago (or just before
// an API server restart) may not be cached yet, and a cache catching up
// after a restart may still hold the Secret an earlier access of the same
// name had under that name (a Buckety deleted and made again), where this
// access's now is.
func (r *Reconciler) deleteOwnSecret(ctx context.Context, a *v1.BucketyAccess, confirm bool) error {
	s, err := r.ownSecretMeta(ctx, a, confirm)
	switch {
	case err == nil && ownsSecret(a, s):
		if err := r.Client.Delete(ctx, s, ctrl.Preconditions{UID: &s.UID}); ctrl.IgnoreNotFound(err) != nil {
			return err
		}
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	return nil
}

// withdraw takes back what an access to another namespace's Buckety holds
// once that Buckety no longer shares with it (f.notShared): every
// credential recorded for it is revoked and the Secret buckety wrote for it
// is deleted (the same when that Buckety is gone), so that nothing in the namespace works on the resource any
// more, whatever the backend issues. The access stays, Ready False
// (NotShared), and is granted again if the owner shares again. Once done,
// its status holds no principal and no grant (v1.BucketyAccess.Withdrawn), which is
// what lets its Buckety's deletion go on without it.
func (r *Reconciler) withdraw(ctx context.Context, a *v1.BucketyAccess, f *facts) (bool, error) {
	if err := r.revokeCached(ctx, a, f); err != nil {
		return false, err
	}
	if creds, err := r.credentials(ctx, a.UID); err != nil || len(creds) > 0 {
		// Revoked, and not yet out of the cache: a pass soon finishes.
		return false, err
	}
	if err := r.deleteOwnSecret(ctx, a, a.Status.BucketyGeneration != 0 || a.Status.Principal != ""); err != nil {
		return false, err
	}
	r.verified.forget(a.UID)
	r.secrets.forget(a.UID)
	r.gates.settle(a.UID)
	a.Status.Principal, a.Status.BucketyGeneration, a.Status.Backend, a.Status.BucketyGenerations, a.Status.Withdrawn = "", 0, "", nil, nil
	a.Status.BucketyUID = ""
	if a.Several() {
		// Every one stopped sharing: none waits for this access.
		for _, ref := range a.Spec.BucketyRefs {
			a.Status.Withdrawn = append(a.Status.Withdrawn, objects.RefKey(a.RefNamespace(ref), ref.Name))
		}
	}
	f.withdrawn = true
	return true, nil
}

// ownSecretMeta reads the metadata of a's Secret (its
// credentialsSecretName) from the cache and, when confirm and the cache
// shows none or one that is not a's, from the API server: a Secret written
// moments ago may not be cached yet, and a cache catching up after a
// restart may still hold the Secret an earlier access of the same name
// had. A settled access's pass reads the cache only.
func (r *Reconciler) ownSecretMeta(ctx context.Context, a *v1.BucketyAccess, confirm bool) (*metav1.PartialObjectMetadata, error) {
	s := secretMeta()
	key := types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName}
	err := r.Client.Get(ctx, key, s)
	if confirm && (apierrors.IsNotFound(err) || err == nil && !ownsSecret(a, s)) {
		s = secretMeta()
		err = r.APIReader.Get(ctx, key, s)
	}
	return s, err
}
