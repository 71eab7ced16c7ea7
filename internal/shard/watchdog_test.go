package shard

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestShardLostAtTheRenewDeadlineWhileListsAreSlow: a replica whose shard
// renewals fail at once while its Lease lists take 0.9 RetryPeriods stops
// the shard's work at the renew deadline counted from its last renewal,
// not when a round next gets to renew it. A round (renewals, the list, the
// takes, a pause of up to 1.2 RetryPeriods) noticed the deadline only when
// it renewed: here up to 2.1 RetryPeriods late, past the Lease's expiry
// (a deadline of 2.5 RetryPeriods, a Lease of 3.75), with the default
// timings up to 16.4 s
// after the last renewal, past the Lease's expiry at 15 s. The shard is
// lost once (the round that finds it overdue too leaves it as it is).
func TestShardLostAtTheRenewDeadlineWhileListsAreSlow(t *testing.T) {
	const (
		retry    = 800 * time.Millisecond
		deadline = 2 * time.Second
		lease    = 3 * time.Second
		// The safety the deadline buys: the work ends before the Lease
		// expires, when another replica may take the shard. A loaded
		// machine's scheduling delay does not come near it; the rounds'
		// own check (rounds of about 2.1 RetryPeriods here) comes past it
		// in about half the runs.
		margin = lease - deadline
	)
	s := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	base := fake.NewClientBuilder().WithScheme(s).Build()
	var failNext, failing atomic.Bool
	var mu sync.Mutex
	var lastRenewal time.Time
	var logs []string
	c := interceptor.NewClient(base, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if obj.GetLabels()[LeaseKindLabel] != "shard" {
				return c.Update(ctx, obj, opts...)
			}
			if failing.Load() {
				return errors.New("the API server refused the renewal")
			}
			began := time.Now()
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			if failNext.Load() {
				mu.Lock()
				lastRenewal = began
				mu.Unlock()
				failing.Store(true)
			}
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if failing.Load() {
				select {
				case <-time.After(retry * 9 / 10):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return c.List(ctx, list, opts...)
		},
	})
	started := make(chan struct{}, 1)
	stopped := make(chan time.Time, 1)
	a := &Assigner{
		Client: c, Namespace: "ns", Name: testLeaseName, Identity: "a", Shards: 1,
		LeaseDuration: lease, RenewDeadline: deadline, RetryPeriod: retry,
		Run: func(ctx context.Context, k int) error {
			select {
			case started <- struct{}{}:
			default:
			}
			<-ctx.Done()
			select {
			case stopped <- time.Now():
			default:
			}
			return nil
		},
		Log: funcr.New(func(prefix, args string) {
			mu.Lock()
			logs = append(logs, args)
			mu.Unlock()
		}, funcr.Options{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("want a clean stop, got %v", err)
		}
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the shard was not taken")
	}
	// The next renewal is the last that succeeds.
	failNext.Store(true)
	var lostAt time.Time
	select {
	case lostAt = <-stopped:
	case <-time.After(deadline + 10*retry):
		t.Fatal("the shard's work did not stop")
	}
	mu.Lock()
	renewed := lastRenewal
	mu.Unlock()
	if renewed.IsZero() {
		t.Fatal("the shard's work stopped before its last renewal")
	}
	late := lostAt.Sub(renewed) - deadline
	t.Logf("the shard's work stopped %s after its last renewal (renew deadline %s)", lostAt.Sub(renewed).Round(time.Millisecond), deadline)
	if late > margin {
		t.Errorf("the shard's work stopped %s past the renew deadline after its last renewal, past the Lease's expiry; want at most %s", late.Round(time.Millisecond), margin)
	}
	if late < -50*time.Millisecond {
		t.Errorf("the shard's work stopped %s before the renew deadline after its last renewal", (-late).Round(time.Millisecond))
	}
	// Rounds that find the shard overdue do not lose it again.
	time.Sleep(3 * retry)
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, l := range logs {
		if strings.Contains(l, "lost a shard") {
			n++
			if !strings.Contains(l, "could not be renewed: the API server refused the renewal") {
				t.Errorf("want the loss to say the renewal's error, logged %s", l)
			}
		}
	}
	if n != 1 {
		t.Errorf("want the shard lost once, logged %d losses", n)
	}
}
