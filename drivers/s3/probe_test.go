package s3

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// TestProbe: the probe passes against a real MinIO with the backend's
// keys, is an *drivers.AccessDeniedError with a wrong secret and an
// *drivers.UnavailableError on a port nothing listens on, which it reports
// at once (no SDK retries) rather than after the request timeout.
func TestProbe(t *testing.T) {
	f := newFixture(t, ImplMinIO, s3test.Options{}, nil)
	ctx := context.Background()
	if err := f.backend.Probe(ctx); err != nil {
		t.Fatalf("want the probe to pass, got %v", err)
	}
	if got := f.backend.Implementation(); got != ImplMinIO {
		t.Errorf("want implementation %s, got %q", ImplMinIO, got)
	}
	wrong := *f.cfg
	wrong.SecretAccessKey = "not-the-secret"
	be, _ := open(t, &wrong)
	if err := be.Probe(ctx); !drivers.IsAccessDenied(err) {
		t.Errorf("want a wrong secret to be AccessDenied, got %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	down := *f.cfg
	down.Endpoint = closed
	down.RequestTimeout = drivers.Duration{Duration: time.Minute}
	be, _ = open(t, &down)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = be.Probe(ctx)
	if !drivers.IsUnavailable(err) {
		t.Errorf("want a closed port to be Unavailable, got %v", err)
	}
	var me *retry.MaxAttemptsError
	if !errors.As(err, &me) || me.Attempt != 1 {
		t.Errorf("want the probe sent once, without retries, got %v", err)
	}
}
