package kadm

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestLastingRefusals: a broker error code Kafka does not retry is a
// drivers.RefusedError (the same request gets the same answer); one it
// retries (a controller moving, a leader election) is not, and is asked
// again; the controller's own user refused is AccessDenied.
func TestLastingRefusals(t *testing.T) {
	b := &Backend{name: "kafka"}
	for _, c := range []struct {
		code    error
		refused bool
	}{
		{kerr.InvalidRequest, true},
		{kerr.PolicyViolation, true},
		{kerr.NotController, false},
		{kerr.RequestTimedOut, false},
		{kerr.ClusterAuthorizationFailed, false},
	} {
		err := b.classify(fmt.Errorf("create ACLs: %w", c.code))
		if got := drivers.IsRefused(err); got != c.refused {
			t.Errorf("%v: IsRefused = %v, want %v", c.code, got, c.refused)
		}
	}
	if err := b.classify(fmt.Errorf("create ACLs: %w", kerr.ClusterAuthorizationFailed)); !drivers.IsAccessDenied(err) {
		t.Errorf("CLUSTER_AUTHORIZATION_FAILED: want AccessDenied, got %v", err)
	}
}

// TestRefusedCreates: a create the broker refuses with a code Kafka does
// not retry, or for the controller's user, made nothing
// (drivers.NotCreatedError, still a refusal or a denial); one retried or
// an unknown server error may hide a topic the broker made, and is not.
func TestRefusedCreates(t *testing.T) {
	b := &Backend{name: "kafka"}
	for _, c := range []struct {
		code       error
		notCreated bool
	}{
		{kerr.InvalidReplicationFactor, true},
		{kerr.PolicyViolation, true},
		{kerr.InvalidConfig, true},
		{kerr.UnknownServerError, false},
		{kerr.RequestTimedOut, false},
		{kerr.NotController, false},
		{kerr.TopicAuthorizationFailed, true},
		{kerr.ClusterAuthorizationFailed, true},
	} {
		err := b.createError(fmt.Errorf("create topic t: %w", c.code))
		if got := drivers.IsNotCreated(err); got != c.notCreated {
			t.Errorf("%v: IsNotCreated = %v, want %v", c.code, got, c.notCreated)
		}
		if c.notCreated && !drivers.IsRefused(err) && !drivers.IsAccessDenied(err) {
			t.Errorf("%v: want the not-created error still a refusal or a denial, got %v", c.code, err)
		}
	}
}
