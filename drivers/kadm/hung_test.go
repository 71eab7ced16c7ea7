package kadm

import (
	"context"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestHungBeforeFirstConnection: a broker that hangs before the backend ever
// connected to it (the controller started, then the broker froze) must still
// fail every operation within the request timeout, so a reconcile worker is
// never held longer.
func TestHungBeforeFirstConnection(t *testing.T) {
	b := kafka.Start(t, kafka.Options{})
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Resume(); err != nil {
			t.Error(err)
		}
	})
	cfg := &Config{SeedBrokers: b.Addrs, RequestTimeout: drivers.Duration{Duration: time.Second}}
	be, err := (&Driver{}).Open(context.Background(), "kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, op := range []string{"inspect", "ensure", "delete"} {
		start := time.Now()
		var err error
		switch op {
		case "inspect":
			_, err = be.Inspect(context.Background(), drivers.Resource{Name: "hung"})
		case "ensure":
			_, err = be.Ensure(context.Background(), drivers.Resource{Name: "hung"})
		case "delete":
			err = be.Delete(context.Background(), drivers.Resource{Name: "hung"})
		}
		took := time.Since(start)
		if !drivers.IsUnavailable(err) {
			t.Errorf("%s: want *drivers.UnavailableError, got %T %v", op, err, err)
		}
		if took > 2500*time.Millisecond {
			t.Errorf("%s: want the error within about the 1s request timeout, took %s", op, took)
		}
	}
}
