package shared

import (
	"testing"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

func TestDeletable(t *testing.T) {
	for _, c := range []struct {
		phase         v1.ClaimPhase
		deleteAdopted bool
		want          bool
	}{
		{v1.ClaimClaimed, true, false},
		{v1.ClaimCreating, false, true},
		{v1.ClaimCreated, false, true},
		{v1.ClaimAdopting, true, false},
		{v1.ClaimAdopted, false, false},
		{v1.ClaimAdopted, true, true},
	} {
		cl := &v1.BucketyClaim{Spec: v1.BucketyClaimSpec{Phase: c.phase}}
		if got := Deletable(cl, c.deleteAdopted); got != c.want {
			t.Errorf("%s with deleteAdopted=%v: want %v, got %v", c.phase, c.deleteAdopted, c.want, got)
		}
	}
}
