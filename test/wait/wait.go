// Package wait polls a condition. It is the one polling helper of every
// test package (the integration tests, the fault harness, the scale
// benchmark, the drivers' tests), so how often a condition is polled and
// what a timeout says are decided once. It imports nothing of buckety, so
// driver tests can use it. The conformance suite (drivers/drivertest) is a
// package of drivers/, which imports nothing of test/: it polls by itself.
package wait

import (
	"testing"
	"time"
)

// Interval is how often a condition is polled.
const Interval = 100 * time.Millisecond

// Until polls cond every Interval until it is true, and reports whether it
// became true before deadline (cond is tried once more at the deadline).
// For figures and conditions a caller reports on its own.
func Until(deadline time.Time, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Interval)
	}
}

// For polls cond until it reports true, and fails t when timeout passes
// first, with what and the last detail cond gave.
func For(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	if !Until(time.Now().Add(timeout), func() bool {
		ok, detail := cond()
		last = detail
		return ok
	}) {
		if last == "" {
			t.Fatalf("%s: not true after %s", what, timeout)
		}
		t.Fatalf("%s: not true after %s; last seen: %s", what, timeout, last)
	}
}
