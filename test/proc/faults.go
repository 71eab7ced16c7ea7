package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Fault injection: the fault harness (test/faults) pauses, kills and
// restarts the processes it started, always by PID.

// Pause stops the process group with SIGSTOP: its sockets stay open and
// nothing answers, which is what a hung server looks like to a client. It
// returns once every thread of the process is stopped (WaitStopped).
func (p *Process) Pause() error {
	if err := p.groupSignal(syscall.SIGSTOP); err != nil {
		return err
	}
	return WaitStopped(p.PID())
}

// stopBackstop bounds WaitStopped: a backstop against a process that never
// stops, not a speed goal.
const stopBackstop = time.Minute

// WaitStopped waits until every thread of process pid is stopped (state T
// in /proc/pid/task/*/stat). A stop signal is not a stop: the kernel
// hands it to one thread, which must run to stop the others, and on a
// loaded machine that thread can wait for a CPU for tens of milliseconds
// while the process's other threads, already running, keep answering
// requests. A test that pauses a server and then expects no answer must
// not start before that.
func WaitStopped(pid int) error {
	deadline := time.Now().Add(stopBackstop)
	for {
		running, err := runningThreads(pid)
		if err != nil {
			return err
		}
		if running == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: %d thread(s) still running %s after SIGSTOP", pid, running, stopBackstop)
		}
		time.Sleep(time.Millisecond)
	}
}

// runningThreads counts the threads of pid that are neither stopped nor
// exited.
func runningThreads(pid int) (int, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("threads of pid %d: %w", pid, err)
	}
	n := 0
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // the thread exited since the listing
		}
		if err != nil {
			return 0, err
		}
		if s := threadState(b); s != 'T' && s != 't' && s != 'Z' && s != 'X' {
			n++
		}
	}
	return n, nil
}

// threadState is the state field of a /proc stat line: the byte after
// the command name, which is in parentheses and may hold any byte.
func threadState(stat []byte) byte {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return '?'
	}
	return stat[i+2]
}

// Resume continues a paused process group with SIGCONT.
func (p *Process) Resume() error { return p.groupSignal(syscall.SIGCONT) }

// Kill sends SIGKILL to the process group and waits until it has exited:
// a crash, with no chance to clean up.
func (p *Process) Kill() error {
	if done, _ := p.Exited(); done {
		return nil
	}
	if err := p.groupSignal(syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID())
	}
}

func (p *Process) groupSignal(sig syscall.Signal) error {
	if done, _ := p.Exited(); done {
		return fmt.Errorf("%s (pid %d) has exited", p.Name, p.PID())
	}
	if err := syscall.Kill(-p.PID(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%v %s (pid %d): %w", sig, p.Name, p.PID(), err)
	}
	return nil
}

// Respawn starts the same binary with the same arguments, environment and
// log file as p, which must have exited (Kill or Stop it first). Logs are
// appended, so one file tells the story across restarts.
func (p *Process) Respawn() (*Process, error) {
	if done, _ := p.Exited(); !done {
		return nil, fmt.Errorf("respawn %s: pid %d still runs", p.Name, p.PID())
	}
	if p.cmd.SysProcAttr != nil && p.cmd.SysProcAttr.Setsid {
		return nil, fmt.Errorf("respawn %s: detached processes are tracked by pid file; restart them with their own helper", p.Name)
	}
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(p.cmd.Path, p.cmd.Args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = p.cmd.Env
	attr := *p.cmd.SysProcAttr
	cmd.SysProcAttr = &attr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("respawn %s: %w", p.Name, err)
	}
	np := &Process{Name: p.Name, Log: p.Log, cmd: cmd, exited: make(chan struct{})}
	go func() { np.err = cmd.Wait(); close(np.exited) }()
	return np, nil
}
