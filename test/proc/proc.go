// Package proc starts and stops the servers tests and local tooling run:
// every process is started here, logs to a file, and is stopped by PID
// (its process group), never by name. In child mode a parent-death signal
// kills it if the test binary dies; in detached mode it gets its own session
// and a pid file so a later invocation can stop exactly it.
package proc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a child process started and stopped by PID.
type Process struct {
	Name string
	// Log is the file holding its stdout and stderr.
	Log string
	cmd *exec.Cmd
	// exited is closed when the process has been waited for (child mode).
	exited chan struct{}
	// logFrom is where this process's output begins in Log (an earlier
	// process of the name may have written before it).
	logFrom int64
	err     error
}

// PID is the process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Start starts bin with args, logging to dir/logs/<name>.log. In
// detached mode the process gets its own session and outlives this one; in
// child mode it is killed when this process dies.
func Start(dir, name, bin string, args []string, env []string, detached bool) (*Process, error) {
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(filepath.Join(dir, "pids"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, Log: logPath, logFrom: st.Size(), cmd: cmd, exited: make(chan struct{})}
	if detached {
		if err := os.WriteFile(PidFile(dir, name), []byte(strconv.Itoa(p.PID())+"\n"+bin+"\n"), 0o644); err != nil {
			return nil, err
		}
		// Reap it if it dies while we are still running.
		go func() { p.err = cmd.Wait(); close(p.exited) }()
	} else {
		go func() { p.err = cmd.Wait(); close(p.exited) }()
	}
	return p, nil
}

// Exited reports whether the process has ended, with its error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.err
	default:
		return false, nil
	}
}

// Signal sends SIGTERM to the process (not its group) and returns at once;
// tests use it to watch a graceful shutdown.
func (p *Process) Signal() error {
	if done, _ := p.Exited(); done {
		return nil
	}
	return p.cmd.Process.Signal(syscall.SIGTERM)
}

// Stop sends SIGTERM to the process group, waits up to grace, then SIGKILL.
func (p *Process) Stop(grace time.Duration) error {
	if done, _ := p.Exited(); done {
		return nil
	}
	pgid := p.PID()
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", p.Name, pgid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", p.Name, pgid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, pgid)
	}
}

// Tail returns the last n lines of the process log, for error messages.
func (p *Process) Tail(n int) string { return tailFile(p.Log, n) }

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PidFile is where a detached process of that name records its PID.
func PidFile(dir, name string) string { return filepath.Join(dir, "pids", name+".pid") }

// StopDetached stops a process started detached by an earlier invocation,
// from its pid file. It checks that the PID still runs the recorded binary,
// so a recycled PID is never signalled.
func StopDetached(dir, name string, grace time.Duration) error {
	b, err := os.ReadFile(PidFile(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	fields := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
	pid, err := strconv.Atoi(fields[0])
	if err != nil || len(fields) != 2 {
		return fmt.Errorf("%s: malformed pid file", PidFile(dir, name))
	}
	if !Runs(pid, fields[1]) {
		return os.Remove(PidFile(dir, name))
	}
	if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", name, pid, err)
	}
	deadline := time.Now().Add(grace)
	for Runs(pid, fields[1]) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if Runs(pid, fields[1]) {
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
		}
		for i := 0; i < 100 && Runs(pid, fields[1]); i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if Runs(pid, fields[1]) {
		return fmt.Errorf("%s (pid %d) still running after SIGKILL", name, pid)
	}
	return os.Remove(PidFile(dir, name))
}

// Runs reports whether pid is alive (not a zombie) and executes bin.
func Runs(pid int, bin string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return strings.TrimSuffix(exe, " (deleted)") == bin
}

// FreePort returns a free TCP port on 127.0.0.1, chosen at random below
// the kernel's ephemeral range (ip_local_port_range). A port the kernel
// hands out for "127.0.0.1:0" comes from that range, and so does the
// source port of every outgoing connection: between closing the probe
// listener and the server binding the port, one of the many client
// connections a test run makes could take it (a CI run failed on MinIO's
// "Specified port is already in use"). Below the range only another
// listener can take it; a server that still finds its port taken is
// started again on new ports (PortTaken).
func FreePort() (int, error) {
	lo, hi := belowEphemeral()
	for i := 0; i < 64; i++ {
		port := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		if err := l.Close(); err != nil {
			return 0, err
		}
		return port, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// belowEphemeral is the range FreePort picks from: [10000, start of the
// ephemeral range), or [10000, 32768) when the range cannot be read
// (Linux's default range starts at 32768).
func belowEphemeral() (lo, hi int) {
	lo, hi = 10000, 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return lo, hi
	}
	if start, err := strconv.Atoi(f[0]); err == nil && start > lo+1000 {
		hi = start
	}
	return lo, hi
}

// PortTaken says whether p exited because a port it was to listen on was
// taken (MinIO: "Specified port is already in use"; Go servers: "bind:
// address already in use"), so that its starter may try again on new
// ports.
func PortTaken(p *Process) bool {
	if done, _ := p.Exited(); !done {
		return false
	}
	f, err := os.Open(p.Log)
	if err != nil {
		return false
	}
	defer f.Close()
	// Only this process's own output: an earlier attempt's "already in
	// use" must not make another failure look like a taken port.
	out, err := io.ReadAll(io.NewSectionReader(f, p.logFrom, 1<<20))
	if err != nil {
		return false
	}
	return strings.Contains(string(out), "already in use")
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1.
func FreePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// CopyTree copies the directories and regular files under src to dst,
// writable, leaving out .git directories and anything else (links,
// devices): a source tree to build from that must not be written to, as a
// module in the read-only module cache or a checkout the caller provides.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// BuildGoBinary returns the file named by env when set, else builds pkg
// into dir.
func BuildGoBinary(env, pkg, dir string) (string, error) {
	if p := os.Getenv(env); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s=%s: %w", env, p, err)
		}
		return abs, nil
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// GoBinary returns the path of the Go command pkg (an import path in this
// module): the file named by the environment variable env when set (make
// builds the test binaries once and sets it), else a fresh build in a test
// temp dir.
func GoBinary(t testing.TB, env, pkg string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			t.Fatalf("%s=%s: %v", env, p, err)
		}
		return abs
	}
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// Running reports whether the detached process name recorded under dir
// still runs the binary it was started from.
func Running(dir, name string) (running, recorded bool) {
	b, err := os.ReadFile(PidFile(dir, name))
	if err != nil {
		return false, false
	}
	f := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
	pid, err := strconv.Atoi(f[0])
	return err == nil && len(f) == 2 && Runs(pid, f[1]), true
}
