package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// memoryRoot is the cgroup v1 memory hierarchy (this machine runs cgroup
// v1, as the local node's kubelet does).
const memoryRoot = "/sys/fs/cgroup/memory"

// MemoryLimit is a cgroup v1 memory group holding one process, as the
// kubelet enforces a container's memory limit: past the limit the kernel
// OOM-kills the process.
type MemoryLimit struct {
	dir string
}

// LimitMemory moves the process pid into a new memory cgroup limited to
// bytes. The process should set GOMEMLIMIT to the same value, as the
// Deployments do (downward API), so that it reacts to the limit the way
// it does in a Pod.
func LimitMemory(pid int, bytes int64) (*MemoryLimit, error) {
	if _, err := os.Stat(filepath.Join(memoryRoot, "memory.limit_in_bytes")); err != nil {
		return nil, fmt.Errorf("no cgroup v1 memory controller at %s: %w", memoryRoot, err)
	}
	m := &MemoryLimit{dir: filepath.Join(memoryRoot, fmt.Sprintf("bkt-test-%d-%d", pid, time.Now().UnixNano()))}
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		return nil, err
	}
	for _, w := range []struct{ file, value string }{
		{"memory.limit_in_bytes", strconv.FormatInt(bytes, 10)},
		{"cgroup.procs", strconv.Itoa(pid)},
	} {
		if err := os.WriteFile(filepath.Join(m.dir, w.file), []byte(w.value), 0o644); err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", w.file, err), m.Remove())
		}
	}
	return m, nil
}

// OOMKills is how many times the kernel killed a process of the group for
// exceeding the limit.
func (m *MemoryLimit) OOMKills() (int, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, "memory.oom_control"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	// Kernels without the oom_kill counter: failcnt counts hits of the
	// limit, which the process survives only by freeing memory.
	return 0, nil
}

// MaxUsage is the most memory the group used, in bytes.
func (m *MemoryLimit) MaxUsage() (int64, error) {
	b, err := os.ReadFile(filepath.Join(m.dir, "memory.max_usage_in_bytes"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// Remove deletes the group once its process has exited (a group with
// processes cannot be removed; they are moved to the root first).
func (m *MemoryLimit) Remove() error {
	if b, err := os.ReadFile(filepath.Join(m.dir, "cgroup.procs")); err == nil {
		for _, pid := range strings.Fields(string(b)) {
			if err := os.WriteFile(filepath.Join(memoryRoot, "cgroup.procs"), []byte(pid), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.Remove(m.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
