package harness

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Yolean/buckety-controller/test/proc"
)

// ControllerOptions start a buckety-controller binary.
type ControllerOptions struct {
	// Dir holds its logs (Dir/logs/buckety-controller.log).
	Dir string
	// Bin is the built binary (Build).
	Bin string
	// Kubeconfig and ConfigDir are its --kubeconfig and -c.
	Kubeconfig, ConfigDir string
	// Args are more flags, as "--leader-elect=false".
	Args []string
	// Env adds environment variables (the config's ${VAR}s).
	Env []string
	// MetricsInsecure serves metrics over plain HTTP (MetricsURL), for a
	// harness that scrapes them.
	MetricsInsecure bool
	// Pprof serves pprof on a loopback port (PprofURL).
	Pprof bool
	// ReadyTimeout is how long its readiness probe (its caches synced) may
	// take to answer 200; 60 s when zero.
	ReadyTimeout time.Duration
}

// Controller is a running buckety-controller process.
type Controller struct {
	// P is the process.
	P *proc.Process
	// Probe, Metrics and Pprof are the host:port it serves on (Pprof empty
	// unless asked for).
	Probe, Metrics, Pprof string
}

// StartController starts the binary on free loopback ports and waits until
// its readiness probe answers 200 (its caches are synced).
func StartController(o ControllerOptions) (*Controller, error) {
	ports, err := proc.FreePorts(3)
	if err != nil {
		return nil, err
	}
	c := &Controller{Probe: "127.0.0.1:" + strconv.Itoa(ports[0]), Metrics: "127.0.0.1:" + strconv.Itoa(ports[1])}
	args := []string{"-c", o.ConfigDir, "--kubeconfig", o.Kubeconfig, "--health-probe-bind-address", c.Probe, "--metrics-bind-address", c.Metrics}
	if o.MetricsInsecure {
		args = append(args, "--metrics-insecure")
	}
	if o.Pprof {
		c.Pprof = "127.0.0.1:" + strconv.Itoa(ports[2])
		args = append(args, "--pprof-bind-address", c.Pprof)
	}
	p, err := proc.Start(o.Dir, "buckety-controller", o.Bin, append(args, o.Args...), o.Env, false)
	if err != nil {
		return nil, err
	}
	c.P = p
	wait := o.ReadyTimeout
	if wait == 0 {
		wait = 60 * time.Second
	}
	if err := c.WaitReady(wait); err != nil {
		return nil, fmt.Errorf("%w (and stop: %v)", err, p.Stop(10*time.Second))
	}
	return c, nil
}

// WaitReady polls the readiness probe until it answers 200, failing at
// once with the log's tail if the process exits.
func (c *Controller) WaitReady(timeout time.Duration) error {
	return waitHTTP200(c.P, "http://"+c.Probe+"/readyz", timeout)
}

// Restart kills the process with SIGKILL and starts it again with the same
// arguments, as a kubelet restarting a crashed container would (without its
// backoff), and waits until it is ready.
func (c *Controller) Restart() error {
	if err := c.P.Kill(); err != nil {
		return err
	}
	np, err := c.P.Respawn()
	if err != nil {
		return err
	}
	c.P = np
	return c.WaitReady(60 * time.Second)
}

// RSS is the resident set size of the process in bytes (VmRSS of
// /proc/PID/status).
func (c *Controller) RSS() (int64, error) { return RSS(c.P.PID()) }

// RSS reads VmRSS of /proc/pid/status, in bytes.
func RSS(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// PeakRSS reads VmHWM of /proc/pid/status, in bytes: the peak resident set
// size since the process started or since 5 was written to
// /proc/pid/clear_refs.
func PeakRSS(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

// statusBytes reads a field counted in kB from /proc/pid/status, in bytes.
func statusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == field+":" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: %q: %w", pid, line, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s line", pid, field)
}

// waitHTTP200 polls url until it answers 200 or timeout passes.
func waitHTTP200(p *proc.Process, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	cl := &http.Client{Timeout: time.Second}
	last := ""
	for {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited: %v\n%s", p.Name, err, p.Tail(30))
		}
		resp, err := cl.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s (%s: %s):\n%s", p.Name, timeout, url, last, p.Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
