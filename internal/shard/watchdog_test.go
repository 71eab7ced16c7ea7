package shard

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// fakeClock is a clock that moves only when the test sets it, with its
// timers, for an Assigner's Now and AfterFunc: the time a watchdog is
// armed for, and what has happened by then, are then the test's to check,
// whatever a loaded machine's scheduling does to real time.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// fakeTimer is one of a fakeClock's timers: f is called at at, unless it
// is stopped first.
type fakeTimer struct {
	c  *fakeClock
	at time.Time
	f  func()
	// over: fired or stopped (under c.mu).
	over bool
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc arms a timer that set calls once the clock reaches now + d. A
// timer due already is called on a goroutine of its own, as time.AfterFunc
// calls it, not before AfterFunc has returned.
func (c *fakeClock) AfterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		t.over = true
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.over
	t.over = true
	return was
}

// armed is when each timer neither fired nor stopped is due, in order.
func (c *fakeClock) armed() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Time
	for _, t := range c.timers {
		if !t.over {
			out = append(out, t.at)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// set moves the clock to at and calls the timers due by then, in order of
// their time, on the caller's goroutine: what they do is done when set
// returns.
func (c *fakeClock) set(at time.Time) {
	c.mu.Lock()
	c.now = at
	var due, left []*fakeTimer
	for _, t := range c.timers {
		switch {
		case t.over:
		case !t.at.After(at):
			t.over = true
			due = append(due, t)
		default:
			left = append(left, t)
		}
	}
	c.timers = left
	c.mu.Unlock()
	sort.SliceStable(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, t := range due {
		t.f()
	}
}

// await waits for c. The minute is a guard against a hang, far beyond what
// a round takes on a loaded machine, not a bound the test asserts.
func await[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("%s within a minute", what)
		var zero T
		return zero
	}
}

// TestShardLostAtTheRenewDeadlineWhileListsAreSlow: a replica whose shard
// renewals fail while its round is held up in a slow list of the Leases
// stops the shard's work at the renew deadline counted from its last
// renewal, not when a round next gets to renew it. A round (renewals, the
// list, the takes, a pause of up to 1.2 RetryPeriods) noticed the deadline
// only when it renewed: with the default timings up to 16.4 s after the
// last renewal, past the Lease's expiry at 15 s, when another replica may
// take the shard while its work still runs here.
//
// The Assigner runs on a fake clock (Now and AfterFunc), its round held in
// its list while the test moves that clock, so only the shard's watchdog
// can lose it then: the watchdog is armed for the last renewal +
// RenewDeadline exactly, the shard's work goes on up to a nanosecond
// before and is cancelled at that time, while the round is still in its
// list; the shard is lost once, with the failed renewal's error, and the
// rounds after leave it lost.
func TestShardLostAtTheRenewDeadlineWhileListsAreSlow(t *testing.T) {
	const (
		// RetryPeriod paces the rounds in real time; the Lease timings
		// count on the fake clock, which moves only when the test sets
		// it.
		retry    = 200 * time.Millisecond
		deadline = 2 * time.Second
		lease    = 3 * time.Second
	)
	s := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	base := fake.NewClientBuilder().WithScheme(s).Build()
	taken := time.Unix(1_700_000_000, 0)
	clk := &fakeClock{now: taken}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	isShard := func(opts []client.ListOption) bool {
		var lo client.ListOptions
		lo.ApplyOptions(opts)
		return lo.LabelSelector != nil && lo.LabelSelector.Matches(labels.Set{LeaseKindLabel: "shard"})
	}
	var (
		failNext, failing, parkedOnce atomic.Bool
		failedRenewals                atomic.Int32
		mu                            sync.Mutex
		lastRenewal                   time.Time
		logs                          []string
	)
	// parked: a round is in its list, after a renewal that failed, and
	// stays there until release is closed. listed: the shards' Leases
	// were listed once more after that.
	parked, release := make(chan struct{}), make(chan struct{})
	listed := make(chan struct{}, 100)
	c := interceptor.NewClient(base, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if obj.GetLabels()[LeaseKindLabel] != "shard" {
				return c.Update(ctx, obj, opts...)
			}
			if failing.Load() {
				failedRenewals.Add(1)
				return errors.New("the API server refused the renewal")
			}
			at := obj.(*coordinationv1.Lease).Spec.RenewTime.Time
			if err := c.Update(ctx, obj, opts...); err != nil {
				return err
			}
			if failNext.Load() {
				mu.Lock()
				lastRenewal = at
				mu.Unlock()
				failing.Store(true)
			}
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if isShard(opts) && failedRenewals.Load() > 0 {
				if parkedOnce.CompareAndSwap(false, true) {
					// The round's list answers only when the test
					// lets it, whatever the round's timeout (of
					// real time): the round cannot renew, nor
					// notice the deadline, meanwhile.
					close(parked)
					<-release
				} else {
					select {
					case listed <- struct{}{}:
					default:
					}
				}
			}
			return c.List(ctx, list, opts...)
		},
	})
	started := make(chan context.Context, 1)
	returned := make(chan struct{}, 1)
	a := &Assigner{
		Client: c, Namespace: "ns", Name: testLeaseName, Identity: "a", Shards: 1,
		LeaseDuration: lease, RenewDeadline: deadline, RetryPeriod: retry,
		Now: clk.Now, AfterFunc: clk.AfterFunc,
		Run: func(ctx context.Context, k int) error {
			select {
			case started <- ctx:
			default:
			}
			<-ctx.Done()
			select {
			case returned <- struct{}{}:
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
	losses := func() (n int, wrong []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range logs {
			if strings.Contains(l, "lost a shard") {
				n++
				if !strings.Contains(l, "could not be renewed: the API server refused the renewal") {
					wrong = append(wrong, l)
				}
			}
		}
		return n, wrong
	}
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	var releaseOnce sync.Once
	defer func() {
		releaseOnce.Do(func() { close(release) })
		cancel()
		if err := <-done; err != nil {
			t.Errorf("want a clean stop, got %v", err)
		}
	}()
	work := await(t, started, "the shard was not taken")
	// The last renewal that succeeds comes a round after the take, at
	// another time of the clock, so the watchdog is armed at the renewal,
	// not only at the take.
	clk.set(taken.Add(retry))
	failNext.Store(true)
	await(t, parked, "no round reached its list after a failed renewal")

	mu.Lock()
	renewed := lastRenewal
	mu.Unlock()
	due := renewed.Add(deadline)
	if got := clk.armed(); len(got) != 1 || !got[0].Equal(due) {
		t.Fatalf("watchdogs armed for %v; want one, for the last renewal %v + the renew deadline %s: %v", got, renewed, deadline, due)
	}
	// Up to the deadline the shard's work goes on.
	clk.set(due.Add(-time.Nanosecond))
	if work.Err() != nil {
		t.Fatalf("the shard's work was stopped before the renew deadline after its last renewal")
	}
	if got := a.Held(); len(got) != 1 {
		t.Fatalf("holds %v before the renew deadline; want shard 0", got)
	}
	// At the deadline the watchdog stops it, while the round is still in
	// its list (it has not been released), and has not renewed again.
	n := failedRenewals.Load()
	clk.set(due)
	if work.Err() == nil {
		t.Fatalf("the shard's work was not stopped at the renew deadline after its last renewal, while the round was in its list")
	}
	if got := a.Held(); len(got) != 0 {
		t.Errorf("holds %v at the renew deadline; want none", got)
	}
	if got := failedRenewals.Load(); got != n {
		t.Errorf("%d renewals tried while the round was in its list; want none", got-n)
	}
	if n, wrong := losses(); n != 1 || len(wrong) > 0 {
		t.Errorf("at the renew deadline: want the shard lost once, saying the renewal's error; logged %d losses, %d without it: %q", n, len(wrong), wrong)
	}

	// The rounds after leave the shard lost: its work ends, and nothing
	// loses it again.
	releaseOnce.Do(func() { close(release) })
	await(t, returned, "the shard's work did not return once stopped")
	for i := 0; i < 2; i++ {
		await(t, listed, "the rounds stopped after the loss")
	}
	if n, wrong := losses(); n != 1 || len(wrong) > 0 {
		t.Errorf("rounds after the loss: want the shard lost once, saying the renewal's error; logged %d losses, %d without it: %q", n, len(wrong), wrong)
	}
}
