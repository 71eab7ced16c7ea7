package access

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestRefusedOutright: only a refusal the backend would give again
// (drivers.RefusedError) revokes a key whose narrowing failed; a server
// error or throttling that outlasted the driver's retries, an outage, the
// controller's own keys refused, or a pass cut short are asked again.
func TestRefusedOutright(t *testing.T) {
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	tooLarge := &drivers.RefusedError{Err: errors.New("bucket policy too large for versitygw: 3900 bytes")}
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"a policy too large", live, fmt.Errorf("grant: %w", tooLarge), true},
		{"a server error after the retries", live, errors.New("operation error S3: PutBucketPolicy, https response error StatusCode: 503, api error SlowDown"), false},
		{"a broker error code", live, errors.New("CreateACLs: NOT_CONTROLLER"), false},
		{"unreachable", live, &drivers.UnavailableError{Backend: "s3", Err: tooLarge}, false},
		{"the controller's keys refused", live, &drivers.AccessDeniedError{Backend: "s3", Err: errors.New("403")}, false},
		{"a deadline", live, fmt.Errorf("put: %w", context.DeadlineExceeded), false},
		{"the pass cut short", ended, tooLarge, false},
	} {
		if got := refusedOutright(c.ctx, c.err); got != c.want {
			t.Errorf("%s: refusedOutright = %v, want %v", c.name, got, c.want)
		}
	}
}
