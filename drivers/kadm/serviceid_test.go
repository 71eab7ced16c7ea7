package kadm

import (
	"context"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestServiceIDIsTheClusterID: two brokers of other cluster IDs tell
// their backends apart; a backend keeps its cluster's ID once read (it
// answers with the broker stopped), and one that could not read it is
// not left with the failure: it reads it once the broker answers.
func TestServiceIDIsTheClusterID(t *testing.T) {
	ctx := context.Background()
	short := func(c *Config) { c.RequestTimeout = drivers.Duration{Duration: time.Second} }
	a := newFixture(t, kafka.Options{ClusterID: "cluster-a"}, short)
	b := newFixture(t, kafka.Options{ClusterID: "cluster-b"}, short)
	for want, f := range map[string]*fixture{"cluster-a": a, "cluster-b": b} {
		got, err := f.backend.ServiceID(ctx)
		if err != nil || got != want {
			t.Fatalf("want ServiceID %s, got %q, %v", want, got, err)
		}
	}

	if err := a.broker.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, err := a.backend.ServiceID(ctx); err != nil || got != "cluster-a" {
		t.Errorf("with the broker stopped: want the ID read before, cluster-a, got %q, %v", got, err)
	}

	if err := b.broker.Pause(); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{SeedBrokers: b.broker.Addrs, RequestTimeout: drivers.Duration{Duration: time.Second}}
	be, err := (&Driver{}).Open(ctx, "kafka-b", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = be.Close() })
	fresh := be.(*Backend)
	if got, err := fresh.ServiceID(ctx); err == nil {
		t.Fatalf("with the broker paused: want an error from a backend that never read the ID, got %q", got)
	}
	if err := b.broker.Resume(); err != nil {
		t.Fatal(err)
	}
	if got, err := fresh.ServiceID(ctx); err != nil || got != "cluster-b" {
		t.Errorf("once the broker answers: want cluster-b, got %q, %v", got, err)
	}
}
