package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func state(t *testing.T, pid int) byte {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndexByte(string(b), ')')
	return b[i+2]
}

// TestFaultInjection pauses, resumes, kills and respawns a real process.
func TestFaultInjection(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(t.TempDir(), "sleeper", sleep, []string{"300"}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(5 * time.Second); err != nil {
			t.Error(err)
		}
	})
	if _, err := p.Respawn(); err == nil {
		t.Fatal("want Respawn of a running process refused, got none")
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	// Pause returns once the process is stopped, not when the signal is sent.
	if s := state(t, p.PID()); s != 'T' {
		t.Fatalf("want state T (stopped) when Pause returns, got %c", s)
	}
	deadline := time.Now().Add(time.Minute) // a backstop, not a speed goal
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	for state(t, p.PID()) == 'T' && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := state(t, p.PID()); s == 'T' {
		t.Fatal("want the process running after Resume, still stopped")
	}
	old := p.PID()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if done, _ := p.Exited(); !done {
		t.Fatal("want the process exited after Kill")
	}
	np, err := p.Respawn()
	if err != nil {
		t.Fatal(err)
	}
	p = np
	if p.PID() == old {
		t.Fatalf("want a new PID after Respawn, got the old %d", old)
	}
	if done, _ := p.Exited(); done {
		t.Fatal("want the respawned process running")
	}
}

// TestThreadState reads the state after the command name, which may hold
// spaces and parentheses.
func TestThreadState(t *testing.T) {
	for line, want := range map[string]byte{
		"42 (kfake-broker) T 1 42 42 0": 'T',
		"42 (a) S (b)) R 1 42 42 0":     'R',
		"42 (sleep) S 1 42":             'S',
		"42 (no state)":                 '?',
		"garbage":                       '?',
	} {
		if got := threadState([]byte(line)); got != want {
			t.Errorf("threadState(%q) = %c, want %c", line, got, want)
		}
	}
}

// TestWaitStopped: a process with many running threads counts as stopped
// only once none of them runs.
func TestWaitStopped(t *testing.T) {
	self := os.Getpid()
	n, err := runningThreads(self)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("runningThreads of this running test process: want at least 1 (this thread), got 0")
	}
	if _, err := runningThreads(1 << 30); err == nil {
		t.Error("runningThreads of a pid that does not exist: want an error, got none")
	}
}
