package s3

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
)

// TestLastingRefusals: what a server refuses for what the request asks (a
// 4xx) is a drivers.RefusedError, which a failed narrowing takes for a
// refusal (revoking the wider key); a server error, throttling, a timeout
// or a conflict with a request in flight is not, and is asked again; the
// controller's own keys refused are AccessDenied.
func TestLastingRefusals(t *testing.T) {
	b := &Backend{name: "s3"}
	s3err := func(status int) error {
		return fmt.Errorf("operation error S3: PutBucketPolicy: %w", &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: errors.New("api error")})
	}
	for _, c := range []struct {
		name      string
		err       error
		refused   bool
		denied    bool
		unreached bool
	}{
		{"S3 400 MalformedPolicy", b.classify(s3err(400)), true, false, false},
		{"S3 404", b.classify(s3err(404)), true, false, false},
		{"S3 403", b.classify(s3err(403)), false, true, false},
		{"S3 409", b.classify(s3err(409)), false, false, false},
		{"S3 429", b.classify(s3err(429)), false, false, false},
		{"S3 500", b.classify(s3err(500)), false, false, false},
		{"S3 503 SlowDown", b.classify(s3err(503)), false, false, false},
		{"admin 400", b.adminError("add canned policy", &minioadmin.Error{Route: "/add-canned-policy", Status: 400, Code: "XMinioMalformedIAMPolicy"}), true, false, false},
		{"admin 503", b.adminError("add canned policy", &minioadmin.Error{Route: "/add-canned-policy", Status: 503, Code: "XMinioServerNotInitialized"}), false, false, true},
		{"admin 408", b.adminError("add user", &minioadmin.Error{Route: "/add-user", Status: 408}), false, false, false},
	} {
		if got := drivers.IsRefused(c.err); got != c.refused {
			t.Errorf("%s: IsRefused = %v, want %v (%v)", c.name, got, c.refused, c.err)
		}
		if got := drivers.IsAccessDenied(c.err); got != c.denied {
			t.Errorf("%s: IsAccessDenied = %v, want %v", c.name, got, c.denied)
		}
		if got := drivers.IsUnavailable(c.err); got != c.unreached {
			t.Errorf("%s: IsUnavailable = %v, want %v", c.name, got, c.unreached)
		}
	}
}

// TestRefusedCreates: a CreateBucket (sent once) answered with any 4xx
// made nothing (drivers.NotCreatedError), and keeps its class (403 is
// still AccessDenied); a server error may hide a bucket it made, and is
// not one.
func TestRefusedCreates(t *testing.T) {
	b := &Backend{name: "s3"}
	for _, c := range []struct {
		status     int
		notCreated bool
	}{{400, true}, {404, true}, {403, true}, {408, true}, {409, true}, {429, true}, {500, false}, {503, false}} {
		err := b.createError(fmt.Errorf("operation error S3: CreateBucket: %w", &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: c.status}}, Err: errors.New("api error")}))
		if got := drivers.IsNotCreated(err); got != c.notCreated {
			t.Errorf("S3 %d: IsNotCreated = %v, want %v (%v)", c.status, got, c.notCreated, err)
		}
		if c.status == 403 && !drivers.IsAccessDenied(err) {
			t.Errorf("S3 403: want it still AccessDenied, got %v", err)
		}
	}
}
