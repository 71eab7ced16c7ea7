package memory

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestApplyGCDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name, env, want string
		startup         bool
		percent         int
	}{
		{"unset: the start-up setting, then the default", "", "25 (100 while starting)", true, StartupGOGC},
		{"the operator's value wins", "80", "80", false, 50},
		{"off wins too", "off", "off", false, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(50)
			got, startup := ApplyGCDefault(func(k string) string {
				if k == "GOGC" {
					return tt.env
				}
				return ""
			})
			if got != tt.want || startup != tt.startup {
				t.Errorf("want %q, start-up setting %v; got %q, %v", tt.want, tt.startup, got, startup)
			}
			if p := debug.SetGCPercent(100); p != tt.percent {
				t.Errorf("want GC percent %d, got %d", tt.percent, p)
			}
		})
	}
}

// TestReleaserReleasesOnlyAfterABurst: free pages under ReleaseFloor, or
// under an eighth of the live heap, stay; more than both are released.
func TestReleaserReleasesOnlyAfterABurst(t *testing.T) {
	for _, tt := range []struct {
		name       string
		free, live uint64
		want       bool
	}{
		{"steady state: little free", 4 << 20, 100 << 20, false},
		{"under the floor", ReleaseFloor - 1, 0, false},
		{"under an eighth of a large heap", 30 << 20, 400 << 20, false},
		{"after a burst", 40 << 20, 100 << 20, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			released := false
			r := &Releaser{read: func() (uint64, uint64) { return tt.free, tt.live }, release: func() { released = true }}
			if got := r.check(); got != tt.want || released != tt.want {
				t.Errorf("want released %v, got %v (release called %v)", tt.want, got, released)
			}
		})
	}
}

// TestHeapFreeReadsTheRuntime: the runtime's metrics are read (a renamed
// metric would read as zero and release nothing, ever).
func TestHeapFreeReadsTheRuntime(t *testing.T) {
	keep := make([][]byte, 0, 64)
	for range 64 {
		keep = append(keep, make([]byte, 1<<20))
	}
	runtime.GC()
	if _, live := heapFree(); live < 64<<20 {
		t.Errorf("want the live heap at least the 64 MiB held, got %d", live)
	}
	runtime.KeepAlive(keep)
	runtime.GC()
	if free, _ := heapFree(); free == 0 {
		t.Errorf("want free heap pages once 64 MiB is freed, got none")
	}
}
