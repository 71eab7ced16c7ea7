package harness

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// The fault harness and the scale benchmark take their sizes from the
// environment (FAULTS_*, SCALE_*): a small run in make test, a full one in
// its own make target. These read them, the same way for both.

// EnvInts sets *dst from each variable named in vars that is set: an
// integer of at least least, or t fails naming the variable.
func EnvInts(t *testing.T, least int, vars map[string]*int) {
	t.Helper()
	for k, dst := range vars {
		if v := os.Getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < least {
				t.Fatalf("%s=%q: want an integer of at least %d", k, v, least)
			}
			*dst = n
		}
	}
}

// EnvDurations sets *dst from each variable named in vars that is set: a
// positive duration, or t fails naming the variable.
func EnvDurations(t *testing.T, vars map[string]*time.Duration) {
	t.Helper()
	for k, dst := range vars {
		if v := os.Getenv(k); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				t.Fatalf("%s=%q: want a positive duration, as 60s", k, v)
			}
			*dst = d
		}
	}
}
