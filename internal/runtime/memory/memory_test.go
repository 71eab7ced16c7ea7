package memory

import (
	"runtime/debug"
	"testing"
)

func TestApplyGCDefault(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tests := []struct {
		name, env, want string
		percent         int
	}{
		{"unset: the default", "", "25", DefaultGOGC},
		{"the operator's value wins", "80", "80", 100},
		{"off wins too", "off", "off", 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			got := ApplyGCDefault(func(k string) string {
				if k == "GOGC" {
					return tt.env
				}
				return ""
			})
			if got != tt.want {
				t.Errorf("want %q, got %q", tt.want, got)
			}
			if p := debug.SetGCPercent(100); p != tt.percent {
				t.Errorf("want GC percent %d, got %d", tt.percent, p)
			}
		})
	}
}
