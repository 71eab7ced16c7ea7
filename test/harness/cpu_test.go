package harness

import (
	"math"
	"os"
	"testing"
)

func TestParseProcStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       float64
		wantErr    bool
	}{
		{name: "plain", stat: "1234 (buckety) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 1000 0 0", want: 3},
		{name: "spaces and parens in the command", stat: "42 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0", want: 0.1},
		{name: "no command", stat: "42 a R 1", wantErr: true},
		{name: "short", stat: "42 (a) R 1 2 3", wantErr: true},
		{name: "not a number", stat: "1 (a) S 1 1 1 0 -1 0 0 0 0 0 x 3 0 0 20 0 1 0 1 0 0", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStatCPU(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("want error %v, got %v", tc.wantErr, err)
			}
			if !tc.wantErr && math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("want %v s, got %v", tc.want, got)
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	got, err := parseProcStat("cpu  100 5 50 800 40 1 2 2 0 0\ncpu0 50 2 25 400 20 0 1 1 0 0\nintr 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpuTimes{total: 1000, idle: 840}); got != want {
		t.Errorf("want %+v, got %+v", want, got)
	}
	if _, err := parseProcStat("intr 1\n"); err == nil {
		t.Error("want an error without a cpu line, got none")
	}
	if b := busyBetween(cpuTimes{total: 1000, idle: 840}, cpuTimes{total: 1200, idle: 990}); math.Abs(b-0.25) > 1e-9 {
		t.Errorf("busy: want 0.25, got %v", b)
	}
}

// The readers work on this machine's own files.
func TestCPUSecondsSelf(t *testing.T) {
	if _, err := CPUSeconds(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := machineCPU(); err != nil {
		t.Fatal(err)
	}
}
