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
	if _, err := Up(t.Context(), other, tmp, func(string) {}); err == nil || !strings.Contains(err.Error(), running) {
		t.Fatalf("Up beside a running node: %v; want a refusal naming %s", err, running)
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
