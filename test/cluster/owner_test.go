package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/test/proc"
)

// TestANodeRunningElsewhereIsNeitherClearedNorJoined: make test's e2e
// node beside a newcomer's make run node. While the node of one state
// directory runs, a second directory's Up is refused with the first's name,
// and its Down removes only its own directory: never the host paths, links
// and cgroups the running node uses. Only the host-wide part is faked (the
// owner record and one host path in a temporary directory); the running
// node is a recorded detached process, as a kubelet is.
func TestANodeRunningElsewhereIsNeitherClearedNorJoined(t *testing.T) {
	tmp := t.TempDir()
	owner, hostPaths := OwnerFile, HostPaths
	t.Cleanup(func() { OwnerFile, HostPaths = owner, hostPaths })
	OwnerFile = filepath.Join(tmp, "owner")
	hostPath := filepath.Join(tmp, "run-containerd")
	if err := os.Mkdir(hostPath, 0o755); err != nil {
		t.Fatal(err)
	}
	HostPaths = []string{hostPath}

	running, other := filepath.Join(tmp, "local"), filepath.Join(tmp, "e2e")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	if sleep, err = filepath.EvalSymlinks(sleep); err != nil {
		t.Fatal(err)
	}
	if _, err := proc.Start(running, "kubelet", sleep, []string{"300"}, nil, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := proc.StopDetached(running, "kubelet", 5*time.Second); err != nil {
			t.Errorf("stop the stand-in kubelet: %v", err)
		}
	})
	if err := os.WriteFile(OwnerFile, []byte(running+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	if got, held := HeldElsewhere(other); !held || got != running {
		t.Fatalf("HeldElsewhere(%s) = %q, %v; want %q, true", other, got, held, running)
	}
	if _, held := HeldElsewhere(running); held {
		t.Fatalf("a node is held elsewhere from its own directory")
	}
	if err := ErrHeld(running); !strings.Contains(err.Error(), running) || !strings.Contains(err.Error(), "make stop") {
		t.Errorf("the refusal names neither the running node's directory nor how to stop it: %v", err)
	}
	if err := guardHost(other); err == nil || !strings.Contains(err.Error(), running) {
		t.Fatalf("starting a node beside a running one: %v; want a refusal naming %s", err, running)
	}

	if err := os.MkdirAll(filepath.Join(other, "controlplane"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Down(other); err != nil {
		t.Fatalf("Down beside a running node: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("Down left its own directory: %v", err)
	}
	if _, err := os.Stat(hostPath); err != nil {
		t.Errorf("Down beside a running node removed the host path it uses: %v", err)
	}
	if left := Leftovers(other); len(left) > 0 {
		t.Errorf("Leftovers beside a running node lists that node's: %v", left)
	}
	if got := hostOwner(); got != running {
		t.Errorf("the owner record names %q after the other directory's Down, want %q", got, running)
	}
}

// TestANodeStartingElsewhereHoldsTheHost: Up records its directory before
// it installs packages and starts processes; meanwhile a second directory
// must not take the record for a dead node's and clear the host. A record
// older than startingFor with nothing running is a dead node's.
func TestANodeStartingElsewhereHoldsTheHost(t *testing.T) {
	tmp := t.TempDir()
	owner := OwnerFile
	t.Cleanup(func() { OwnerFile = owner })
	OwnerFile = filepath.Join(tmp, "owner")
	starting, other := filepath.Join(tmp, "local"), filepath.Join(tmp, "e2e")
	if err := os.Mkdir(starting, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := guardHost(starting); err != nil {
		t.Fatalf("the first node: %v", err)
	}
	if got, held := HeldElsewhere(other); !held || got != starting {
		t.Fatalf("a node recorded a moment ago, nothing running yet: want it held by %s, got %q, %v", starting, got, held)
	}
	if hostIsDirs(other) {
		t.Error("the host-wide part of a starting node was taken for another directory's to clear")
	}
	old := time.Now().Add(-2 * startingFor)
	if err := os.Chtimes(OwnerFile, old, old); err != nil {
		t.Fatal(err)
	}
	if _, held := HeldElsewhere(other); held {
		t.Error("a record older than startingFor with nothing running: want it a dead node's, got held")
	}
	if err := guardHost(other); err != nil {
		t.Fatalf("starting after a dead node: %v", err)
	}
	if got := hostOwner(); got != other {
		t.Errorf("the owner record after the new start: want %s, got %q", other, got)
	}
}

// TestDownWhereNoNodeRanLeavesTheHostAlone: make stop (and make clean) on
// a machine where no node was started, as a Docker host with its own
// /run/containerd: Down touches no host path, and Leftovers reports none,
// so the command succeeds.
func TestDownWhereNoNodeRanLeavesTheHostAlone(t *testing.T) {
	tmp := t.TempDir()
	// This machine may run a node beside the tests (make test's e2e side):
	// its links must not count here, and must never be cleared.
	owner, hostPaths, links := OwnerFile, HostPaths, nodeLinks
	t.Cleanup(func() { OwnerFile, HostPaths, nodeLinks = owner, hostPaths, links })
	nodeLinks = func() []string { return nil }
	OwnerFile = filepath.Join(tmp, "owner")
	hostPath := filepath.Join(tmp, "run-containerd")
	if err := os.Mkdir(hostPath, 0o755); err != nil {
		t.Fatal(err)
	}
	HostPaths = []string{hostPath}
	never := filepath.Join(tmp, "never-started")
	if err := Down(never); err != nil {
		t.Fatalf("Down where no node ran: %v", err)
	}
	if _, err := os.Stat(hostPath); err != nil {
		t.Errorf("Down where no node ran removed a host path: %v", err)
	}
	if left := Leftovers(never); len(left) > 0 {
		t.Errorf("Leftovers where no node ran: want none, got %v", left)
	}
}
