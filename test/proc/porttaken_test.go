package proc

import (
	"testing"
	"time"
)

// TestPortTakenReadsOnlyItsOwnOutput: a server started again under the
// same name logs to the same file; only its own output says whether its
// port was taken, not an earlier attempt's.
func TestPortTakenReadsOnlyItsOwnOutput(t *testing.T) {
	dir := t.TempDir()
	run := func(msg string) *Process {
		t.Helper()
		p, err := Start(dir, "server", "/bin/sh", []string{"-c", "echo '" + msg + "'; exit 1"}, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if done, _ := p.Exited(); done {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatal("the process did not exit")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if first := run("FATAL Unable to start the server: Specified port is already in use"); !PortTaken(first) {
		t.Error("a server that said its port was taken: want PortTaken")
	}
	if second := run("FATAL Unable to read its data"); PortTaken(second) {
		t.Error("the next attempt failed otherwise: want not PortTaken, though the log holds the first's words")
	}
}
