package buckety

import (
	"errors"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// TestRefusedEnsureIsRetriedSlowly: an Ensure refused for good (a broker
// error code Kafka does not retry, an S3 4xx, a Kafka topic that is no
// longer the one its owner record names) answers the same until someone
// acts, so its Buckety is retried on the slower backoff, as a refused
// create is; every other error of the backend is retried soon.
func TestRefusedEnsureIsRetriedSlowly(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want retry.Failure
	}{
		{"refused", &drivers.RefusedError{Err: errors.New("topic orders is not the topic its owner record names")}, retry.Permanent},
		{"other", errors.New("broker answered a server error"), retry.Transient},
		{"unavailable", &drivers.UnavailableError{Backend: "kafka", Err: errors.New("connection refused")}, retry.Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &facts{}
			f.Record(tc.err)
			f.refused = drivers.IsRefused(tc.err)
			if got := failure(f); got != tc.want {
				t.Errorf("want %v, got %v", tc.want, got)
			}
		})
	}
}
