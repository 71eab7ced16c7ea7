package drivertest

import (
	"context"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// LostCreateSettles runs the first create of r, a resource that does not
// exist yet (create only, as on a claim just recorded), with arm making
// the network lose the create's answer after the server carried it out,
// and lost counting the answers lost. Sent again, the create would be
// answered "already exists" and read as a resource someone else made
// since the adoption check, which the controller hands to adoption. The
// call must fail as unavailable (its outcome unknown), and the next pass
// (not create only) must find the resource, not create it.
func LostCreateSettles(t testing.TB, be drivers.Backend, r drivers.Resource, arm func(), lost func() int) {
	t.Helper()
	ctx := context.Background()
	if in, err := be.Inspect(ctx, r); err != nil || in.Exists {
		t.Fatalf("inspect before the create: want no %s, got %+v %v", r.Name, in, err)
	}
	arm()
	first := r
	first.CreateOnly = true
	res, err := be.Ensure(ctx, first)
	if n := lost(); n != 1 {
		t.Fatalf("want the create's answer lost once, lost %d (result %+v, err %v)", n, res, err)
	}
	if err == nil {
		t.Fatalf("a create whose answer was lost: want an error (outcome unknown), got none and %+v, which reads as a resource someone else created", res)
	}
	if !drivers.IsUnavailable(err) {
		t.Errorf("a create whose answer was lost: want *drivers.UnavailableError, got %T %v", err, err)
	}
	res, err = be.Ensure(ctx, r)
	if err != nil {
		t.Fatalf("the next pass: %v", err)
	}
	if res.Created {
		t.Errorf("the next pass: the server made %s on the lost create; want it found, got Created", r.Name)
	}
}
