// Package kafka starts the test Kafka-protocol broker (test/kafka/broker) as
// a process on free loopback ports, for driver, controller and end-to-end
// tests.
package kafka

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/test/proc"
)

// BinaryEnv names the environment variable holding a prebuilt broker.
const BinaryEnv = "BUCKETY_KFAKE_BROKER"

// Options configure a broker process.
type Options struct {
	// Brokers is the number of brokers (default 1).
	Brokers int
	// SASL entries are MECHANISM:user:password superusers.
	SASL []string
	// ACLs enforces ACLs (with SASL: every user but the superusers is
	// allowed only what its ACLs say).
	ACLs bool
	// ReauthMS is the broker's connections.max.reauth.ms: a SASL
	// connection must re-authenticate within it, or is closed.
	ReauthMS int
	// Kafka26 makes the broker answer only Kafka 2.6's API versions,
	// without the SCRAM admin API.
	Kafka26 bool
	// TLSCert and TLSKey are PEM files to serve TLS with.
	TLSCert, TLSKey string
	// DataDir persists state so a restart keeps topics.
	DataDir string
	// CountRequests makes the broker count the requests it handles per API
	// key; Requests reads the counts.
	CountRequests bool
	// BrokerConfigs are broker configs DescribeConfigs reports, as a
	// broker started with them in server.properties does (the broker acts
	// only on the keys kfake knows).
	BrokerConfigs map[string]string
	// ClusterID is the cluster ID its Metadata answers report; "" keeps
	// kfake's, which every broker started without it shares.
	ClusterID string
}

// Broker is a running broker process.
type Broker struct {
	// Addrs are the brokers' host:port addresses on 127.0.0.1.
	Addrs []string
	opts  Options
	bin   string
	dir   string
	ports []int
	// statsPort serves the request counts (Options.CountRequests).
	statsPort int
	p         *proc.Process
	// detached brokers get their own session and a pid file.
	detached bool
	// paused: the process is stopped with SIGSTOP (Pause).
	paused bool
}

// Package is the broker program's import path.
const Package = "github.com/Yolean/buckety-controller/test/kafka/broker"

// Start starts a broker and stops it when the test ends.
func Start(t testing.TB, opts Options) *Broker {
	t.Helper()
	b, err := StartIn(t.TempDir(), TestBinary(t), opts, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("stop broker: %v", err)
		}
	})
	return b
}

// StartIn starts the broker binary bin with its files under dir; detached
// processes outlive this one (the local stack).
func StartIn(dir, bin string, opts Options, detached bool) (*Broker, error) {
	if opts.Brokers == 0 {
		opts.Brokers = 1
	}
	ports, err := proc.FreePorts(opts.Brokers)
	if err != nil {
		return nil, err
	}
	b := &Broker{opts: opts, bin: bin, dir: dir, ports: ports, detached: detached}
	if opts.CountRequests {
		if b.statsPort, err = proc.FreePort(); err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		err := b.start()
		if err == nil {
			return b, nil
		}
		if b.p == nil || !proc.PortTaken(b.p) || attempt == 3 {
			return nil, err
		}
		// Another listener took a port between FreePorts and the bind
		// (proc.FreePort): start again on new ones.
		if b.ports, err = proc.FreePorts(opts.Brokers); err != nil {
			return nil, err
		}
		if b.statsPort != 0 {
			if b.statsPort, err = proc.FreePort(); err != nil {
				return nil, err
			}
		}
		b.p = nil
	}
}

// Bootstrap is the comma-separated broker list.
func (b *Broker) Bootstrap() string { return strings.Join(b.Addrs, ",") }

func (b *Broker) start() error {
	addrFile := filepath.Join(b.dir, "addrs")
	if err := os.Remove(addrFile); err != nil && !os.IsNotExist(err) {
		return err
	}
	ps := make([]string, len(b.ports))
	for i, p := range b.ports {
		ps[i] = strconv.Itoa(p)
	}
	args := []string{"--brokers", strconv.Itoa(b.opts.Brokers), "--ports", strings.Join(ps, ","), "--addr-file", addrFile}
	for _, s := range b.opts.SASL {
		args = append(args, "--sasl", s)
	}
	if b.opts.ACLs {
		args = append(args, "--acls")
	}
	if b.opts.Kafka26 {
		args = append(args, "--kafka-2.6")
	}
	if b.opts.ReauthMS > 0 {
		args = append(args, "--reauth-ms", strconv.Itoa(b.opts.ReauthMS))
	}
	for _, k := range slices.Sorted(maps.Keys(b.opts.BrokerConfigs)) {
		args = append(args, "--broker-config", k+"="+b.opts.BrokerConfigs[k])
	}
	if b.opts.TLSCert != "" {
		args = append(args, "--tls-cert", b.opts.TLSCert, "--tls-key", b.opts.TLSKey)
	}
	if b.opts.DataDir != "" {
		args = append(args, "--data-dir", b.opts.DataDir)
	}
	if b.opts.ClusterID != "" {
		args = append(args, "--cluster-id", b.opts.ClusterID)
	}
	if b.statsPort != 0 {
		args = append(args, "--stats-addr", "127.0.0.1:"+strconv.Itoa(b.statsPort))
	}
	p, err := proc.Start(b.dir, "broker", b.bin, args, nil, b.detached)
	if err != nil {
		return err
	}
	b.p = p
	deadline := time.Now().Add(20 * time.Second)
	for {
		if data, err := os.ReadFile(addrFile); err == nil {
			b.Addrs = strings.Split(strings.TrimSpace(string(data)), ",")
			return nil
		}
		if done, err := p.Exited(); done {
			return fmt.Errorf("broker exited (%v):\n%s", err, p.Tail(20))
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("broker not ready after 20s:\n%s", p.Tail(20))
			return errors.Join(err, b.Stop())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Requests returns how many requests of each API (by Kafka's name, as
// "Metadata") the broker has handled since it started. It needs
// Options.CountRequests.
func (b *Broker) Requests() (map[string]int64, error) {
	if b.statsPort == 0 {
		return nil, errors.New("the broker does not count requests: start it with Options.CountRequests")
	}
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://127.0.0.1:" + strconv.Itoa(b.statsPort) + "/requests")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("request counts: %s", resp.Status)
	}
	out := map[string]int64{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("request counts: %w", err)
	}
	return out, nil
}

// Pause freezes the broker process with SIGSTOP: its connections stay open
// and nothing answers, as with a hung broker. Resume (or Stop) continues it.
func (b *Broker) Pause() error {
	if b.p == nil {
		return errors.New("pause: the broker is not running")
	}
	if err := syscall.Kill(b.p.PID(), syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause broker (pid %d): %w", b.p.PID(), err)
	}
	b.paused = true
	// Until every thread has stopped, threads already running keep
	// answering (proc.WaitStopped).
	return proc.WaitStopped(b.p.PID())
}

// Resume continues a broker frozen by Pause.
func (b *Broker) Resume() error {
	if b.p == nil || !b.paused {
		return nil
	}
	if err := syscall.Kill(b.p.PID(), syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume broker (pid %d): %w", b.p.PID(), err)
	}
	b.paused = false
	return nil
}

// Stop stops the broker process; it is idempotent.
func (b *Broker) Stop() error {
	if b.p == nil {
		return nil
	}
	if err := b.Resume(); err != nil { // a frozen process cannot act on SIGTERM
		return err
	}
	err := b.p.Stop(10 * time.Second)
	b.p = nil
	return err
}

// Restart starts the broker again on the same ports (and data dir).
func (b *Broker) Restart(t testing.TB) {
	t.Helper()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.start(); err != nil {
		t.Fatal(err)
	}
}
