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
		// The call's own context ends only at a backstop far past the 1s
		// request timeout: the driver's timeout must end it first, however
		// slow the machine (the time it took is a figure, not a bound).
		ctx, cancel := context.WithTimeout(context.Background(), hungBackstop)
		start := time.Now()
		var err error
		switch op {
		case "inspect":
			_, err = be.Inspect(ctx, drivers.Resource{Name: "hung"})
		case "ensure":
			_, err = be.Ensure(ctx, drivers.Resource{Name: "hung"})
		case "delete":
			err = be.Delete(ctx, drivers.Resource{Name: "hung"})
		}
		t.Logf("%s: the driver gave up after %s", op, time.Since(start).Round(time.Millisecond))
		if !drivers.IsUnavailable(err) {
			t.Errorf("%s: want *drivers.UnavailableError, got %T %v", op, err, err)
		}
		if ctx.Err() != nil {
			t.Errorf("%s: want the driver's request timeout to end the call, got the test's %s backstop: %v", op, hungBackstop, err)
		}
		cancel()
	}
}

// hungBackstop ends a call to a hung broker that the driver's own request
// timeout (1s in these tests) did not end: a backstop, not a speed goal.
const hungBackstop = time.Minute

// TestOwnerWriteToAFrozenBrokerEndsAtItsTimeout: a broker that freezes
// with the backend's connection open (SIGSTOP) while an owner record is
// produced. The idempotent producer does not give up a record once its
// request was sent, whatever the context, so the write held its reconcile
// worker until the broker answered again; with sixteen workers, a frozen
// registry leader held them all. WriteOwner must end at the request
// timeout, unavailable; the record still lands once the broker answers,
// and a read of the registry finds it.
func TestOwnerWriteToAFrozenBrokerEndsAtItsTimeout(t *testing.T) {
	b := kafka.Start(t, kafka.Options{})
	cfg := &Config{SeedBrokers: b.Addrs, RequestTimeout: drivers.Duration{Duration: time.Second}}
	be, err := (&Driver{}).Open(context.Background(), "kafka", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	ow := be.(drivers.OwnerRecorder)
	rec := func(name string) *drivers.OwnerRecord {
		return &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: name, UID: "u-" + name, State: drivers.OwnerHeld}
	}
	if err := ow.WriteOwner(context.Background(), drivers.Resource{Name: "team.first"}, rec("first")); err != nil {
		t.Fatal(err)
	}
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Resume(); err != nil {
			t.Error(err)
		}
	})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- ow.WriteOwner(context.Background(), drivers.Resource{Name: "team.second"}, rec("second"))
	}()
	select {
	case err := <-done:
		t.Logf("the write to the frozen broker gave up after %s", time.Since(start).Round(time.Millisecond))
		if !drivers.IsUnavailable(err) {
			t.Errorf("want *drivers.UnavailableError, got %T %v", err, err)
		}
	case <-time.After(hungBackstop):
		t.Fatalf("WriteOwner to a frozen broker had not returned after the %s backstop (request timeout 1s)", hungBackstop)
	}
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(hungBackstop)
	for {
		got, err := ow.ReadOwner(context.Background(), drivers.Resource{Name: "team.second"})
		if err == nil && got != nil && *got == *rec("second") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want the record written while the broker was frozen in the registry once it answers again; last read %+v, %v", got, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
