package retry

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	var b Backoff
	want := []time.Duration{1, 2, 4, 8, 16, 20, 20}
	for i, w := range want {
		if got := b.Next("a", Transient); got != w*time.Second {
			t.Errorf("transient failure %d: want %s, got %s", i+1, w*time.Second, got)
		}
	}
	if got := b.Next("b", Permanent); got != 5*time.Second {
		t.Errorf("first permanent failure of another object: want 5s, got %s", got)
	}
	for range 10 {
		b.Next("b", Permanent)
	}
	if got := b.Next("b", Permanent); got != 2*time.Minute {
		t.Errorf("permanent cap: want 2m, got %s", got)
	}
	b.Reset("a")
	if got := b.Next("a", Transient); got != time.Second {
		t.Errorf("after reset: want 1s, got %s", got)
	}
}
