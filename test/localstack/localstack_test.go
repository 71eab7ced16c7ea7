package localstack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/test/cluster"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/localstack"
	"github.com/Yolean/buckety-controller/test/proc"
)

func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a real node; run without -short (make test)")
	}
	if err := cluster.CheckHost(); err != nil {
		t.Fatalf("the node tests need root on Linux: %v", err)
	}
}

// TestNodeUpDownTwice: up, down, up, down, and nothing left behind after
// each down (processes, mounts, links, iptables rules, host paths).
func TestNodeUpDownTwice(t *testing.T) {
	needRoot(t)
	bin, err := controlplane.ResolveBinDir("")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), "bkt-node-test")
	t.Cleanup(func() {
		if err := cluster.Down(dir); err != nil {
			t.Errorf("final down: %v", err)
		}
	})
	for i := 1; i <= 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		start := time.Now()
		_, err := cluster.Up(ctx, dir, bin, func(s string) { t.Log(s) })
		cancel()
		if err != nil {
			t.Fatalf("up #%d: %v", i, err)
		}
		t.Logf("up #%d: node Ready in %s", i, time.Since(start).Round(100*time.Millisecond))
		if err := cluster.Down(dir); err != nil {
			t.Fatalf("down #%d: %v", i, err)
		}
		if left := cluster.Leftovers(dir); len(left) > 0 {
			t.Fatalf("down #%d left behind: %v", i, left)
		}
	}
}

// TestStackEndToEnd is the first proof on real Pods, reached the way a
// newcomer often gets there: a first `make run` fails part way (here its
// image step: node and backends are up, nothing is deployed), one of the
// backends it started dies meanwhile, and the second run resumes: it reuses
// the node (the same kube-apiserver process), starts the backends again,
// and deploys. Then buckety, deployed from the rendered release as real
// Deployments, makes a Buckety on the broker Ready, a probe Job
// round-trips through its Secret, the controller is scaled to zero and a
// second probe Job still completes, the webhook Deployment rejects a bad
// Buckety meanwhile, and teardown leaves nothing.
func TestStackEndToEnd(t *testing.T) {
	needRoot(t)
	dir := filepath.Join(os.TempDir(), "bkt-stack-test")
	if err := localstack.Down(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	var s *localstack.Stack
	t.Cleanup(func() {
		if err := localstack.Down(dir); err != nil {
			t.Errorf("down: %v", err)
		}
		if left := cluster.Leftovers(filepath.Join(dir, "cluster")); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	})

	// The first run: the image step fails (contain is a command that
	// fails), after the node and the backends came up.
	if err := os.Setenv("CONTAIN", "/bin/false"); err != nil {
		t.Fatal(err)
	}
	_, err := localstack.Up(ctx, dir, localstack.Options{}, func(l string) { t.Log(l) })
	if err := os.Unsetenv("CONTAIN"); err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "buckety image") {
		t.Fatalf("want the first run to fail at its image step, got %v", err)
	}
	apiserver := pidOf(t, filepath.Join(dir, "cluster", "controlplane"), "kube-apiserver")
	if err := proc.StopDetached(filepath.Join(dir, "backends", "kafka"), "broker", 10*time.Second); err != nil {
		t.Fatal(err)
	}

	s, err = localstack.Up(ctx, dir, localstack.Options{}, func(l string) { t.Log(l) })
	t.Cleanup(func() {
		if t.Failed() && s != nil {
			for _, args := range [][]string{{"get", "pods", "-A"}, {"-n", "buckety-system", "logs", "deploy/buckety-controller", "--tail=40"}, {"get", "events", "-A", "--field-selector=type=Warning"}} {
				out, _ := s.Kubectl(context.Background(), args...)
				t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
			}
		}
	})
	if err != nil {
		t.Fatalf("the second run did not resume: %v", err)
	}
	if got := strings.Join(s.Reused, ","); got != "node" {
		t.Errorf("want the second run to reuse the node and start the backends again (one had died), got reused %q", got)
	}
	if got := pidOf(t, filepath.Join(dir, "cluster", "controlplane"), "kube-apiserver"); got != apiserver {
		t.Errorf("want the node's kube-apiserver (pid %d) reused, got pid %d", apiserver, got)
	}
	kubectl := func(stdin string, args ...string) string {
		t.Helper()
		path := ""
		if stdin != "" {
			path = filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(path, []byte(stdin), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "-f", path)
		}
		out, err := s.Kubectl(ctx, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kubectl(`apiVersion: v1
kind: Namespace
metadata: {name: e2e}
---
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: stream, namespace: e2e}
spec:
  backend: kafka
  name: "${namespace}.${name}"
  defaultAccess: {credentialsSecretName: stream-topic}
`, "apply")
	kubectl("", "-n", "e2e", "wait", "--for=condition=Ready", "buckety/stream", "--timeout=120s")
	// The local broker enforces SASL and ACLs: the access has a user of
	// its own.
	kubectl("", "-n", "e2e", "wait", "--for=condition=ScopingNotImplemented=False", "bucketyaccess/stream", "--timeout=60s")
	probe := func(name string) {
		t.Helper()
		kubectl(fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s, namespace: e2e}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      hostNetwork: true
      containers:
      - name: probe
        image: %s
        imagePullPolicy: IfNotPresent
        envFrom: [{secretRef: {name: stream-topic}}]
`, name, localstack.ProbeImage), "apply")
		out, err := s.Kubectl(ctx, "-n", "e2e", "wait", "--for=condition=Complete", "job/"+name, "--timeout=120s")
		logs, _ := s.Kubectl(ctx, "-n", "e2e", "logs", "job/"+name)
		if err != nil {
			t.Fatalf("probe job %s did not complete: %v\n%s\nlogs:\n%s", name, err, out, logs)
		}
		if !strings.Contains(string(logs), "probe: OK: ReadWrite (own user") || !strings.Contains(string(logs), "produced and consumed") {
			t.Fatalf("probe job %s: want an OK round trip with a user of its own, got\n%s", name, logs)
		}
	}
	probe("probe-1")
	kubectl("", "-n", "buckety-system", "scale", "deploy/buckety-controller", "--replicas=0")
	kubectl("", "-n", "buckety-system", "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name=buckety-controller", "--timeout=60s")
	probe("probe-2")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: buckety.yolean.se/v1alpha1\nkind: Buckety\nmetadata: {name: bad, namespace: e2e}\nspec: {backend: kafka, name: \"${label['missing']}\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := s.Kubectl(ctx, "create", "-f", bad)
	if err == nil || !strings.Contains(string(out), `the Buckety has no label "missing"`) {
		t.Fatalf("want the webhook Deployment to reject the Buckety while the controller is at zero, got %v\n%s", err, out)
	}
}

// pidOf reads the pid a detached process recorded in dir.
func pidOf(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(proc.PidFile(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("%s: %v", proc.PidFile(dir, name), err)
	}
	return pid
}

// TestExistingOverlay: the overlay for an existing cluster is the release
// plus the given config and credentials, nothing environment-specific.
func TestExistingOverlay(t *testing.T) {
	files, err := localstack.ExistingOverlay(filepath.Join(controlplane.RepoRoot(), "examples", "install"))
	if err != nil {
		t.Fatal(err)
	}
	k := string(files["kustomization.yaml"])
	if !strings.Contains(k, "- ../release") || !strings.Contains(k, "configMapGenerator") || strings.Contains(k, "hostNetwork") {
		t.Errorf("unexpected overlay:\n%s", k)
	}
	if _, err := localstack.ExistingOverlay(t.TempDir()); err == nil {
		t.Error("want an error without buckety-controller.yaml")
	}
}
