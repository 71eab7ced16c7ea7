package kadm

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestProbe: the probe passes against a real Kafka-protocol broker, and is
// an *drivers.UnavailableError when no broker listens on the seed address.
func TestProbe(t *testing.T) {
	f := newFixture(t, kafka.Options{}, nil)
	ctx := context.Background()
	if err := f.backend.Probe(ctx); err != nil {
		t.Fatalf("want the probe to pass, got %v", err)
	}
	if got := f.backend.Implementation(); got != "kafka" {
		t.Errorf("want implementation kafka, got %q", got)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	be, err := New().Open(ctx, "kafka", &Config{SeedBrokers: []string{closed}, RequestTimeout: drivers.Duration{Duration: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := be.(*Backend).Probe(ctx); !drivers.IsUnavailable(err) {
		t.Errorf("want a closed seed broker to be Unavailable, got %v", err)
	}
}
