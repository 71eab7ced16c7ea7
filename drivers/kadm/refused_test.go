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
