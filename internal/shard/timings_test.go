package shard

import (
	"strings"
	"testing"
	"time"
)

// TestAssignerRefusesLeaseTimingsItCannotKeep: a Lease records its
// duration in whole seconds and takers wait what it records, so a lease
// duration with a fraction of a second would let a holder cut off from
// the API server work its shards past the moment another replica may take
// them; and a renew deadline not under the lease duration would too.
func TestAssignerRefusesLeaseTimingsItCannotKeep(t *testing.T) {
	for _, tc := range []struct {
		lease, renew time.Duration
		want         string
	}{
		{10500 * time.Millisecond, 10200 * time.Millisecond, "lease duration 10.5s: want a whole number of seconds"},
		{500 * time.Millisecond, 200 * time.Millisecond, "lease duration 500ms: want a whole number of seconds"},
		{10 * time.Second, 10 * time.Second, "renew deadline 10s: want less than the lease duration 10s"},
	} {
		a := &Assigner{Shards: 4, LeaseDuration: tc.lease, RenewDeadline: tc.renew, RetryPeriod: time.Second}
		if err := a.defaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("lease %s, renew deadline %s: want %q, got %v", tc.lease, tc.renew, tc.want, err)
		}
	}
	ok := &Assigner{Shards: 4, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	if err := ok.defaults(); err != nil {
		t.Errorf("the default timings: want accepted, got %v", err)
	}
}
