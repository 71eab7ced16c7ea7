package access

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// A Buckety missing from the cache is not proof that it is gone. Watches
// of different kinds are not ordered, and a shard's cache shows only the
// objects labelled with its slots: objects written before shards are
// labelled one by one after an upgrade, so a replica can see an access,
// and the record of its credential, before the Buckety they were granted
// on. Revoking then (the Buckety "is gone") would break the tenant's
// working credential and hand it a new one a moment later; withdrawing
// (another namespace's Buckety "no longer shares") would delete its
// Secret. So before anything is taken back on the cache's word, the API
// server is asked, as the orphan sweep does (orphans.go, goneOr).
//
// Only an access that holds something is asked about: one with credential
// records (cached) or, for another namespace's Buckety, a grant its status
// records. A tenant cannot use it to learn of a Buckety of another
// namespace it was never granted.

// cacheLags reports whether Buckety ref, which the pass did not find in
// the cache, is in the API server one the access's credentials or grant
// are bound to. Then the access waits for its cache (f.bucketyLags, with
// f.bucketyWaiting saying so) instead of revoking or withdrawing, and its
// next pass comes by the retry backoff; an access naming several counts
// it among those it waits for.
func (r *Reconciler) cacheLags(ctx context.Context, a *v1.BucketyAccess, ref types.NamespacedName, f *facts) (bool, error) {
	creds, err := r.credentials(ctx, a.UID)
	if err != nil {
		return false, err
	}
	foreign := ref.Namespace != a.Namespace
	if len(creds) == 0 && (!foreign || (a.Status.Principal == "" && a.Status.BucketyGeneration == 0)) {
		return false, nil // nothing to take back
	}
	b := &v1.Buckety{}
	switch err := r.APIReader.Get(ctx, ref, b); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read Buckety %s, which this controller's cache does not show: %w", ref, err)
	}
	if !boundToBuckety(creds, b.UID) {
		// Made again under the name since: what was granted on the old
		// one goes.
		return false, nil
	}
	if foreign && len(b.Spec.Sharing) == 0 {
		// It no longer shares: its shard label (its namespace's slot)
		// keeps it out of this shard's cache on purpose.
		return false, nil
	}
	name := ref.Name
	if foreign {
		name = ref.String()
	}
	f.bucketyLags = true
	f.bucketyWaiting = fmt.Sprintf("waiting for this controller's cache to show Buckety %s, which the API server holds, rather than take back the credential Secret %s holds", name, a.Spec.CredentialsSecretName)
	return true, nil
}

// boundToBuckety reports whether the records creds were granted on the
// Buckety of uid: one records it, or records no Buckety (written before
// credentials were bound). No records (a backend's shared keys) count as
// bound: there is nothing to tell them apart by.
func boundToBuckety(creds []v1.BucketyCredential, uid types.UID) bool {
	if len(creds) == 0 {
		return true
	}
	for _, c := range creds {
		if c.Spec.BucketyUID == "" || c.Spec.BucketyUID == string(uid) {
			return true
		}
		for _, cr := range c.Spec.Resources {
			if cr.BucketyUID == string(uid) {
				return true
			}
		}
	}
	return false
}
