package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Matching returns the PIDs of the processes whose command line (its
// arguments, split at NUL) match says yes to: how tests find the processes
// a server started but did not report, such as containerd's shims or the
// control plane's etcd. A process that is gone or cannot be read is left
// out.
func Matching(match func(args []string) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if match(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
