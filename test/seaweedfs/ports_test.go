package seaweedfs

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestPortsIn: a server started again in a directory takes the ports the
// earlier one recorded (its master's state is named by its port); when one
// of them is taken it gets new ports, and the earlier data, which a master
// on another port would refuse to grow, is removed.
func TestPortsIn(t *testing.T) {
	dir := t.TempDir()
	first, err := portsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 10 {
		t.Fatalf("want ten ports, got %v", first)
	}
	data := filepath.Join(dir, "data", "m"+strconv.Itoa(first[0]))
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	again, err := portsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first, again) {
		t.Errorf("want the recorded ports %v again, got %v", first, again)
	}
	if _, err := os.Stat(data); err != nil {
		t.Errorf("want the data kept on the same ports: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first[6]))
	if err != nil {
		t.Skipf("cannot take port %d to play the taken one: %v", first[6], err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	moved, err := portsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(first, moved) || slices.Contains(moved, first[6]) {
		t.Errorf("want new ports with %d taken, got %v", first[6], moved)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("want the earlier data removed with the ports it was made on, got %v", err)
	}
	recorded, err := portsIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(moved, recorded) {
		t.Errorf("want the new ports recorded (%v), got %v", moved, recorded)
	}
}
