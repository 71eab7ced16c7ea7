package scale

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Yolean/buckety-controller/test/harness"
)

// sweepMemory is what the controller did across one credential sweep of a
// backend: its RSS before (VmRSS), its peak RSS (VmHWM since a reset
// before the sweep began), the sweep's duration and the requests the
// backend's proxy saw during it.
type sweepMemory struct {
	before, peak int64
	duration     time.Duration
	reqs         counts
}

// credentialSweepMemory resets the controller's peak RSS (VmHWM, by
// writing 5 to /proc/PID/clear_refs) and waits until the credential sweep
// of backend has completed twice: the second sweep ran whole after the
// reset, and it is the one measured. The sweep's period is the
// controller's --drift-sweep-interval (30 s by default).
func (e *env) credentialSweepMemory(sv scopedS3Server, timeout time.Duration) sweepMemory {
	e.t.Helper()
	pid := e.ctrl.P.PID()
	rss, err := e.ctrl.RSS()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		e.t.Fatalf("reset the controller's peak RSS: %v", err)
	}
	deadline := time.Now().Add(timeout)
	next := func(after float64) (float64, float64) {
		for {
			n, sum := e.sweepsOf(sv.scoped)
			if n > after {
				return n, sum
			}
			if time.Now().After(deadline) {
				e.t.Fatalf("no credential sweep of %s completed in %s\ncontroller log:\n%s", sv.scoped, timeout, e.ctrl.P.Tail(20))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	n0, _ := e.sweepsOf(sv.scoped)
	n1, sum1 := next(n0)
	before := sv.scopedCounts()
	e.saveProfile("allocs", "sweep-allocs-before")
	_, sum2 := next(n1)
	reqs := sv.scopedCounts().minus(before)
	e.saveProfile("allocs", "sweep-allocs-after")
	e.saveProfile("heap", "sweep-heap-after")
	e.t.Logf("controller memory after the measured sweep: %s; Go runtime: %s", e.rssParts(), e.goMemStats())
	peak, err := harness.PeakRSS(pid)
	if err != nil {
		e.t.Fatal(err)
	}
	return sweepMemory{before: rss, peak: peak, duration: time.Duration((sum2 - sum1) * float64(time.Second)), reqs: reqs}
}

// sweepsOf is how many credential sweeps of backend the controller has
// completed, and their summed duration in seconds.
func (e *env) sweepsOf(backend string) (n, sum float64) {
	e.t.Helper()
	for _, s := range e.controllerMetrics("buckety_backend_request_duration_seconds_count", "buckety_backend_request_duration_seconds_sum") {
		if s.labels["backend"] != backend || s.labels["operation"] != "sweep-credentials" {
			continue
		}
		if strings.HasSuffix(s.name, "_count") {
			n = s.value
		} else {
			sum = s.value
		}
	}
	return n, sum
}

// sweepPeakRSSGoal is issue 54's bound on the controller's peak RSS
// across a sweep of MinIO keys.
const sweepPeakRSSGoal = 96 << 20

// saveProfile saves the controller's pprof profile kind as name.pb.gz in
// the profile directory (SCALE_PROFILE_DIR), when it has one and the
// controller serves pprof. Two allocs profiles around a sweep give what it
// allocated: go tool pprof -sample_index=alloc_space -base before after.
func (e *env) saveProfile(kind, name string) {
	e.t.Helper()
	if e.profileDir == "" || e.ctrl.Pprof == "" {
		return
	}
	raw, err := e.get("http://"+e.ctrl.Pprof+"/debug/pprof/"+kind, false)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.MkdirAll(e.profileDir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	f := filepath.Join(e.profileDir, name+".pb.gz")
	if err := os.WriteFile(f, []byte(raw), 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("controller %s profile: %s", kind, f)
}

// goMemStats is the controller's Go heap and stack figures, from its pprof
// heap page's MemStats (after no GC), or "" without pprof.
func (e *env) goMemStats() string {
	e.t.Helper()
	if e.ctrl.Pprof == "" {
		return ""
	}
	text, err := e.get("http://"+e.ctrl.Pprof+"/debug/pprof/heap?debug=1", false)
	if err != nil {
		e.t.Fatal(err)
	}
	var parts []string
	for _, line := range strings.Split(text, "\n") {
		for _, k := range []string{"HeapInuse", "HeapIdle", "HeapReleased", "StackInuse", "Sys", "NextGC"} {
			if v, ok := strings.CutPrefix(line, "# "+k+" = "); ok {
				parts = append(parts, k+" "+strings.TrimSpace(v))
			}
		}
	}
	return strings.Join(parts, ", ")
}
