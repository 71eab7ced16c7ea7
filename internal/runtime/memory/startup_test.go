package memory

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestStartupGCEndsTheStartUpSetting: StartupGC sets DefaultGOGC and
// hands free pages back when the start settles, when Max passes first, and
// (without the release: the process is stopping) when it is stopped.
func TestStartupGCEndsTheStartUpSetting(t *testing.T) {
	tests := []struct {
		name        string
		settleAfter time.Duration // 0: never
		stopAfter   time.Duration // 0: never
		wantRelease bool
		wantMin     time.Duration
	}{
		{"settled", 50 * time.Millisecond, 0, true, 50 * time.Millisecond},
		{"never settles: Max ends it", 0, 0, true, 300 * time.Millisecond},
		{"stopped first", 0, 50 * time.Millisecond, false, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var percents []int
			released := 0
			s := &StartupGC{
				Max: 300 * time.Millisecond,
				Log: logr.Discard(),
				Settled: func(ctx context.Context) bool {
					var settle <-chan time.Time
					if tt.settleAfter > 0 {
						settle = time.After(tt.settleAfter)
					}
					select {
					case <-settle:
						return true
					case <-ctx.Done():
						return false
					}
				},
				set:     func(p int) int { percents = append(percents, p); return StartupGOGC },
				release: func() { released++ },
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// begin is taken before any timer is set, so each lower bound
			// below holds however slowly this goroutine is scheduled.
			begin := time.Now()
			if tt.stopAfter > 0 {
				time.AfterFunc(tt.stopAfter, cancel)
			}
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if len(percents) != 1 || percents[0] != DefaultGOGC {
				t.Errorf("want GC percent set once to %d, got %v", DefaultGOGC, percents)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.wantRelease]; released != want {
				t.Errorf("want %d releases, got %d", want, released)
			}
			if d := time.Since(begin); d < tt.wantMin {
				t.Errorf("ended after %s, before %s", d, tt.wantMin)
			}
		})
	}
}
