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
	deadline := time.Now().Add(time.Minute) // a backstop, not a speed goal
	for state(t, p.PID()) != 'T' && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := state(t, p.PID()); s != 'T' {
		t.Fatalf("want state T (stopped) after Pause, got %c", s)
	}
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
