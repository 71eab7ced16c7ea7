package wait

import (
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	n := 0
	if !Until(time.Now().Add(5*time.Second), func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("want true on the third poll, got n=%d", n)
	}
	start := time.Now()
	if Until(start.Add(250*time.Millisecond), func() bool { return false }) {
		t.Fatal("a condition never true: want false")
	}
	if time.Since(start) < 250*time.Millisecond {
		t.Fatal("Until returned before its deadline")
	}
}

// fakeT records Fatalf instead of ending the test.
type fakeT struct {
	testing.TB
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.msg = format
}

func TestForReportsTheLastDetail(t *testing.T) {
	f := &fakeT{}
	i := 0
	For(f, 200*time.Millisecond, "ready", func() (bool, string) { i++; return false, "seen" })
	if f.msg == "" {
		t.Fatal("want a failure after the timeout")
	}
	f = &fakeT{}
	For(f, time.Second, "ready", func() (bool, string) { return true, "" })
	if f.msg != "" {
		t.Fatalf("want no failure, got %q", f.msg)
	}
}
