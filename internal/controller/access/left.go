package access

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

// revokeLeft revokes, once the access of name key is gone, the
// credentials recorded for it that its deletion did not revoke: its
// finalizer was removed by hand (a tenant with edit can), so buckety's
// deletion never ran or was cut short. The orphan check (orphans.go)
// would revoke them at its next interval; until then a Secret copied
// before the delete would keep working, and the namespace's access limit
// would count one access fewer than it has working credentials. So the
// reconcile that finds the access gone revokes them at once, and is
// retried until it has.
//
// An access deleted as usual has had its records deleted by its own
// deletion (unseen.go remembers them until the cache shows it): nothing
// is read for it. Each credential is confirmed by fresh reads first (no
// access of its owner's UID, its record still there), as the orphan check
// does.
func (r *Reconciler) revokeLeft(ctx context.Context, key types.NamespacedName) error {
	var list v1.BucketyCredentialList
	if err := r.Client.List(ctx, &list, ctrl.MatchingFields{objects.IndexCredentialOwnerName: objects.RefKey(key.Namespace, key.Name)}); err != nil {
		return fmt.Errorf("list the credentials of access %s: %w", key, err)
	}
	byOwner := map[types.UID][]v1.BucketyCredential{}
	for _, c := range list.Items {
		if c.Spec.Owner.Namespace == key.Namespace && c.Spec.Owner.Name == key.Name {
			uid := types.UID(c.Spec.Owner.UID)
			byOwner[uid] = append(byOwner[uid], c)
		}
	}
	// A record this controller created that its cache does not show yet
	// (the access deleted, its finalizer stripped, during its first
	// issue) is read from the API server, as revokeCached reads them: the
	// cache's word alone would leave its principal to the orphan check.
	for _, uid := range r.unseen.creatingAt(key) {
		if _, listed := byOwner[uid]; listed {
			continue
		}
		var fresh v1.BucketyCredentialList
		if err := r.APIReader.List(ctx, &fresh, ctrl.MatchingLabels{v1.ClaimOwnerLabel: string(uid)}); err != nil {
			return fmt.Errorf("list the credentials of access %s: %w", key, err)
		}
		for _, c := range fresh.Items {
			if c.Spec.Owner.UID == string(uid) && c.Spec.Owner.Namespace == key.Namespace && c.Spec.Owner.Name == key.Name {
				byOwner[uid] = append(byOwner[uid], c)
			}
		}
	}
	var errs []error
	var live *v1.BucketyAccess // read once, when a record is left
	for uid, creds := range byOwner {
		if creds = r.unseen.filter(uid, creds); len(creds) == 0 {
			continue
		}
		if live == nil {
			live = &v1.BucketyAccess{}
			if err := r.APIReader.Get(ctx, key, live); apierrors.IsNotFound(err) {
				live.UID = ""
			} else if err != nil {
				return fmt.Errorf("read access %s: %w", key, err)
			}
		}
		if live.UID == uid {
			continue // there after all: its own passes look after it
		}
		for i := range creds {
			if _, err := r.revokeConfirmed(ctx, &creds[i], metrics.RevokedAccessGone); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
