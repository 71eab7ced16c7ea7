package controller

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/internal/config"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCheck(t *testing.T) {
	reg := drivers.NewRegistry(&drivertest.Driver{Named: "test"})
	var out, errb bytes.Buffer
	dir := writeConfig(t, "backends:\n- {name: a, driver: test, config: {endpoint: x}}\n")
	if code := run([]string{"check", "-c", dir}, &out, &errb, reg); code != 0 {
		t.Fatalf("check of a valid config: want exit 0, got %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "valid, 1 backend(s)") || !strings.Contains(out.String(), "a (driver test 0.1.0)") {
		t.Errorf("want a summary of the backends, got %q", out.String())
	}

	// A backend without a name policy on a service where another has one
	// loads, and check says what a run would log about it.
	out.Reset()
	errb.Reset()
	dir = writeConfig(t, "backends:\n- {name: a, driver: test, service: s, config: {endpoint: x}}\n- {name: b, driver: test, service: s, namePolicy: {prefix: \"$${namespace}.\"}, config: {endpoint: x}}\n")
	if code := run([]string{"check", "-c", dir}, &out, &errb, reg); code != 0 {
		t.Fatalf("check of a valid config: want exit 0, got %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "note: backend a: has no namePolicy, but shares service s with b") {
		t.Errorf("want check to print the notice about backend a, got %q", out.String())
	}

	out.Reset()
	errb.Reset()
	dir = writeConfig(t, "backends:\n- {name: a, driver: test, config: {}}\n")
	if code := run([]string{"check", "-c", dir}, &out, &errb, reg); code != 1 {
		t.Fatalf("check of an invalid config: want exit 1, got %d", code)
	}
	if want := "backends[0].config.endpoint: Required value"; !strings.Contains(errb.String(), want) {
		t.Errorf("want %q in stderr, got %q", want, errb.String())
	}
}

func TestUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-c", "x", "extra"}, &out, &errb, drivers.NewRegistry()); code != 2 {
		t.Errorf("extra argument: want exit 2, got %d", code)
	}
	if code := run([]string{"--nope"}, &out, &errb, drivers.NewRegistry()); code != 2 {
		t.Errorf("unknown flag: want exit 2, got %d", code)
	}
}

// TestBinaryMisconfiguredStartup builds the real binary, with a version
// stamped through -ldflags -X, and checks that each broken config exits
// non-zero with one message naming the file, the field and the fix (spec
// scenario 10, as a crash-looping Pod's log would show it).
func TestBinaryMisconfiguredStartup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; run without -short (make test)")
	}
	bin := filepath.Join(t.TempDir(), "buckety-controller")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/Yolean/buckety-controller/internal/version.Version=v9.8.7 -X github.com/Yolean/buckety-controller/drivers/kadm.version=0.1.42", "-o", bin, "github.com/Yolean/buckety-controller/cmd/buckety-controller")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "buckety-controller v9.8.7") || !strings.Contains(string(out), "driver kadm 0.1.42") {
		t.Fatalf("version: want v9.8.7 and kadm 0.1.42 from -ldflags -X, got %q (%v)", out, err)
	}
	cases := []struct {
		name, body, want string
	}{
		{"strict decode", "backends:\n- name: a\n  drvier: kadm\n", `backends[0].drvier: unknown field "drvier"`},
		{"undefined variable", "backends:\n- name: ${BKT_UNSET_NAME}\n", `backends[0].name: contains ${...} but this field does not support environment substitution`},
		{"unknown driver", "backends:\n- name: a\n  driver: mysql\n", `backends[0].driver: Invalid value: "mysql": unknown driver; this build has: kadm`},
		{"duplicate backends", "backends:\n- {name: a, driver: kadm, config: {seedBrokers: ['k:9092']}}\n- {name: a, driver: kadm, config: {seedBrokers: ['k:9092']}}\n", `backends[1].name: Duplicate value: "a (also backends[0].name); backend names must be unique"`},
		{"missing required driver field", "backends:\n- name: kafka\n  driver: kadm\n  config: {clientID: buckety}\n", `backends[0].config.seedBrokers: Required value: list at least one host:port of the Kafka cluster`},
		{"undefined variable in a driver field", "backends:\n- name: kafka\n  driver: kadm\n  config:\n    seedBrokers: ['k:9092']\n    sasl: {mechanism: PLAIN, username: u, password: '${BKT_UNSET_PASSWORD}'}\n", `backends[0].config.sasl.password: Invalid value: environment variable BKT_UNSET_PASSWORD is not set`},
		{"missing file", "", "file not found: -c names the directory that holds buckety-controller.yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.body != "" {
				dir = writeConfig(t, c.body)
			}
			cmd := exec.Command(bin, "-c", dir)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 {
				t.Fatalf("want exit code 1, got %v\n%s", err, out)
			}
			msg := string(out)
			if !strings.HasPrefix(msg, "buckety-controller: invalid configuration: "+filepath.Join(dir, config.Filename)+": ") {
				t.Errorf("want the message to name the file first, got %q", msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("want %q in %q", c.want, msg)
			}
			if n := strings.Count(strings.TrimSpace(msg), "\n"); n != 0 && !strings.Contains(msg, " problems:\n") {
				t.Errorf("want a single-line message, got %d extra lines: %q", n, msg)
			}
		})
	}
}

func TestBadFlagValuesExit2(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--kube-api-qps", "0"}, "buckety-controller: --kube-api-qps 0: want a positive number of requests per second, or -1"},
		{[]string{"--kube-api-qps", "5", "--kube-api-burst", "-1"}, "buckety-controller: --kube-api-burst -1"},
		{[]string{"--max-concurrent-reconciles", "0"}, "buckety-controller: --max-concurrent-reconciles 0: want at least 1"},
		{[]string{"--backend-probe-interval", "10ms"}, "buckety-controller: --backend-probe-interval 10ms: want 0 (no probe, no BucketyBackend objects) or at least 1s"},
		{[]string{"--leader-elect-lease-duration", "0s"}, "buckety-controller: --leader-elect-lease-duration 0s: want a positive duration"},
		{[]string{"--leader-elect-renew-deadline", "15s"}, "buckety-controller: --leader-elect-renew-deadline 15s: want less than --leader-elect-lease-duration (15s)"},
		{[]string{"--leader-elect-lease-duration", "10500ms", "--leader-elect-renew-deadline", "10200ms"}, "buckety-controller: --leader-elect-lease-duration 10.5s: want a whole number of seconds"},
		{[]string{"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "3s"}, "buckety-controller: --leader-elect-retry-period 3s: want the renew deadline (3s) to exceed 1.2× it"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb, drivers.NewRegistry()); code != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: want exit 2 and %q, got %d %q", c.args, c.want, code, errb.String())
		}
	}
}
