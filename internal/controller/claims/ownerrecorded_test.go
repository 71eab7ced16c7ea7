package claims

import (
	"context"
	"testing"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestOwnerRecordedFollowsTheResource: spec.ownerRecorded says the
// owner's record was on the resource the claim is decided for. It is
// recorded once (RecordOwner), kept while the claim goes on holding that
// resource (Created to Adopted, or the same phase), and cleared where the
// claim goes on to a resource decided again: a phase back to Claimed (a
// create refused: the recorded resource is gone) or to Adopting (one
// found there after all, or being adopted), and a takeover by another
// Buckety, whose record the gone owner's says nothing of. A flag left on
// such a claim would refuse the very resource its owner is adopting.
func TestOwnerRecordedFollowsTheResource(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		to   v1.ClaimPhase
		kept bool
	}{
		{"Created to Adopted", v1.ClaimAdopted, true},
		{"Created to Claimed (create refused)", v1.ClaimClaimed, false},
		{"Created to Adopting (found there)", v1.ClaimAdopting, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			owner := buckety("team", "logs")
			api := newClient(t, owner, claimOf("s3", "logs", "team", "logs", string(owner.UID), v1.ClaimCreated))
			s := &Store{Client: api, APIReader: api}
			cl := getClaim(t, api, "s3", "logs")
			if err := s.RecordOwner(ctx, cl); err != nil {
				t.Fatal(err)
			}
			if got := getClaim(t, api, "s3", "logs"); !got.Spec.OwnerRecorded {
				t.Fatal("RecordOwner: want spec.ownerRecorded set, got it unset")
			}
			if err := s.Advance(ctx, cl, c.to); err != nil {
				t.Fatal(err)
			}
			if got := getClaim(t, api, "s3", "logs"); got.Spec.Phase != c.to || got.Spec.OwnerRecorded != c.kept {
				t.Errorf("want the claim %s with ownerRecorded %v, got %s with %v", c.to, c.kept, got.Spec.Phase, got.Spec.OwnerRecorded)
			}
		})
	}
	t.Run("taken over", func(t *testing.T) {
		gone := claimOf("s3", "logs", "team", "logs", "gone-uid", v1.ClaimCreated)
		gone.Spec.OwnerRecorded = true
		heir := buckety("other", "logs")
		api := newClient(t, heir, retainedBy(gone))
		s := &Store{Client: api, APIReader: api}
		if _, took, conflict, err := s.AcquireAs(ctx, heir, Key{Backend: "s3", Resource: "logs"}, v1.ClaimClaimed, nil, nil); err != nil || conflict != nil || !took {
			t.Fatalf("take over: took %v, conflict %+v, %v", took, conflict, err)
		}
		if got := getClaim(t, api, "s3", "logs"); got.Spec.Owner.UID != string(heir.UID) || got.Spec.OwnerRecorded {
			t.Errorf("want the heir's claim without ownerRecorded, got owner %s, ownerRecorded %v", got.Spec.Owner.UID, got.Spec.OwnerRecorded)
		}
	})
}
