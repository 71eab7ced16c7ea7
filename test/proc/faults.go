package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Fault injection: the fault harness (test/faults) pauses, kills and
// restarts the processes it started, always by PID.

// Pause stops the process group with SIGSTOP: its sockets stay open and
// nothing answers, which is what a hung server looks like to a client.
func (p *Process) Pause() error { return p.groupSignal(syscall.SIGSTOP) }

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
