package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/wait"
)

const (
	systemNS = "buckety-system"
	saName   = "buckety-controller"
)

// buildController builds buckety-controller with the kadm driver version
// stamped through -ldflags -X, as a release would, and with the given
// build tags (testhook.Tag for a test that pauses the binary).
func buildController(t *testing.T, kadmVersion string, tags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "buckety-controller-"+kadmVersion)
	if err := harness.BuildWith(harness.ControllerPackage, out, harness.BuildOptions{
		LDFlags: "-X github.com/Yolean/buckety-controller/drivers/kadm.version=" + kadmVersion,
		Tags:    tags,
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// installRBAC applies the generated roles and binds them to the
// controller's ServiceAccount, and the controller's FlowSchema, as the
// deploy base does.
func installRBAC(t *testing.T) {
	t.Helper()
	if err := harness.InstallRBAC(context.Background(), k8s, harness.ControllerRoleFile(), systemNS, saName); err != nil {
		t.Fatal(err)
	}
	if err := harness.InstallFlowSchema(context.Background(), k8s); err != nil {
		t.Fatal(err)
	}
}

func createOrIgnore(t *testing.T, o client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), o); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create %s: %v", o.GetName(), err)
	}
}

// asServiceAccount prepares a run of the built controller binary: the
// generated RBAC bound to its ServiceAccount, a kubeconfig acting as it,
// and a config directory for the shared backends.
func asServiceAccount(t *testing.T) (kubeconfig, configDir string) {
	t.Helper()
	installRBAC(t)
	kubeconfig = impersonatingKubeconfig(t)
	configDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(configDir, config.Filename), []byte(configYAML("kafka", "s3")), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, configDir
}

// impersonatingKubeconfig writes a kubeconfig whose every request is made as
// the controller's ServiceAccount.
func impersonatingKubeconfig(t *testing.T) string { return saKubeconfig(t, saName) }

// controllerProcess runs a built controller binary as its ServiceAccount.
type controllerProcess struct {
	p          *proc.Process
	probe, met string
}

func runBinary(t *testing.T, bin, kubeconfig, configDir string) *controllerProcess {
	t.Helper()
	return runBinaryEnv(t, bin, kubeconfig, configDir, nil)
}

// runBinaryEnv is runBinary with extra environment variables.
func runBinaryEnv(t *testing.T, bin, kubeconfig, configDir string, extraEnv []string) *controllerProcess {
	t.Helper()
	return runBinaryArgs(t, bin, kubeconfig, configDir, extraEnv, nil)
}

// runBinaryArgs is runBinaryEnv with extra command-line arguments.
func runBinaryArgs(t *testing.T, bin, kubeconfig, configDir string, extraEnv, extraArgs []string) *controllerProcess {
	t.Helper()
	ports, err := proc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	cp := &controllerProcess{probe: fmt.Sprintf("127.0.0.1:%d", ports[0]), met: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	env := append([]string{"TEST_S3_ACCESS_KEY=" + minio.AccessKey, "TEST_S3_SECRET_KEY=" + minio.SecretKey}, extraEnv...)
	p, err := proc.Start(t.TempDir(), "buckety-controller", bin, append([]string{
		"-c", configDir, "--kubeconfig", kubeconfig,
		"--leader-elect", "--leader-election-namespace", systemNS,
		"--health-probe-bind-address", cp.probe, "--metrics-bind-address", cp.met,
		"--recheck-interval", "2s",
	}, extraArgs...), env, false)
	if err != nil {
		t.Fatal(err)
	}
	cp.p = p
	t.Cleanup(func() { cp.stop(t) })
	wait.For(t, waitTimeout, "controller ready", func() (bool, string) {
		if done, err := p.Exited(); done {
			t.Fatalf("controller exited: %v\n%s", err, p.Tail(30))
		}
		resp, err := http.Get("http://" + cp.probe + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	return cp
}

func (c *controllerProcess) stop(t *testing.T) {
	t.Helper()
	if c.p == nil {
		return
	}
	log, err := os.ReadFile(c.p.Log)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.p.Stop(30 * time.Second); err != nil {
		t.Errorf("stop controller: %v", err)
	}
	// Graceful shutdown: SIGTERM makes it exit 0 after releasing the Lease.
	if done, err := c.p.Exited(); !done || err != nil {
		t.Errorf("want a clean exit on SIGTERM, got done=%v err=%v", done, err)
	}
	c.p = nil
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "forbidden") || strings.Contains(line, "Forbidden") {
			t.Errorf("controller made a forbidden request with its own RBAC: %s", line)
		}
	}
}

// TestBinaryWithGeneratedRBACAndDriverVersions runs the built controller as
// its ServiceAccount (impersonated, bound by the generated RBAC) through a
// full lifecycle, then the same controller rebuilt with the next kadm patch
// (auto-applied) and the next major (DriverVersionIncompatible, no backend
// writes). Any forbidden request fails the test.
func TestBinaryWithGeneratedRBACAndDriverVersions(t *testing.T) {
	needInfra(t)
	kubeconfig, dir := asServiceAccount(t)
	ctx := context.Background()
	ns := namespace(t)

	c010 := runBinary(t, buildController(t, "0.1.0"), kubeconfig, dir)
	kb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "versioned", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.versioned",
		Parameters: map[string]string{"partitions": "1"}, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "versioned-topic"}}}
	sb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "objects", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-objects", RetentionPolicy: v1.RetentionDelete,
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "objects-bucket"}}}
	create(t, kb)
	create(t, sb)
	waitCondition(t, kb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, sb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	// Metrics are served over HTTPS (a self-signed certificate) to callers
	// the API server authenticates and authorizes (issue 14.5).
	scrape := func(token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+c010.met+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := hc.Do(req)
		if err != nil {
			if done, exit := c010.p.Exited(); done {
				t.Fatalf("scrape metrics: %v: the controller exited (%v):\n%s", err, exit, c010.p.Tail(40))
			}
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	// The metrics server starts beside the probes, not before them.
	waitListening(t, c010.met, "controller metrics served")
	if code, _ := scrape(""); code != http.StatusUnauthorized {
		t.Errorf("metrics without a token: want 401, got %d", code)
	}
	// The API server's TokenReview reports a token it does not know as not
	// authenticated (401 here; controller-runtime's filter, in the webhook,
	// answers 500): refused either way, and no metric is served.
	if code, body := scrape("not-a-token"); code == http.StatusOK || strings.Contains(body, "controller_runtime") {
		t.Errorf("metrics with a bad token: want refused, got %d", code)
	}
	// A valid token of a user without get on /metrics: authenticated,
	// not authorized.
	nobody := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-metrics", Namespace: systemNS}}
	createOrIgnore(t, nobody)
	expiry := int64(600)
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	if err := k8s.SubResource("token").Create(ctx, nobody, tr); err != nil {
		t.Fatal(err)
	}
	if code, body := scrape(tr.Status.Token); code != http.StatusForbidden || strings.Contains(body, "controller_runtime") {
		t.Errorf("metrics with the token of a user not allowed get /metrics: want 403, got %d", code)
	}
	code, body := scrape(cp.RESTConfig.BearerToken)
	if code != http.StatusOK {
		t.Fatalf("metrics with an authorized token: want 200, got %d: %s", code, body)
	}
	for _, m := range []string{"buckety_backend_request_duration_seconds_bucket", `buckety_resources{backend="kafka",condition="Ready",kind="Buckety",status="True"}`, "controller_runtime_reconcile_total"} {
		if !strings.Contains(body, m) {
			t.Errorf("want metric %s on /metrics", m)
		}
	}
	// Deletion paths under RBAC: the s3 Buckety with its implicit access.
	if err := k8s.Delete(ctx, sb); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "s3 Buckety deleted", func() (bool, string) { return gone(t, sb) })
	if bucketExists(t, ns+"-objects") {
		t.Error("retentionPolicy Delete: want the bucket gone")
	}
	c010.stop(t)

	c011 := runBinary(t, buildController(t, "0.1.1"), kubeconfig, dir)
	wait.For(t, waitTimeout, "patch version auto-applied", func() (bool, string) {
		b := getBuckety(t, ns, "versioned")
		return b.Status.DriverBuildVersion == "0.1.1", b.Status.DriverBuildVersion
	})
	waitCondition(t, kb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	c011.stop(t)

	runBinary(t, buildController(t, "1.0.0"), kubeconfig, dir)
	patch(t, kb, `{"spec":{"parameters":{"partitions":"3"}}}`)
	c := waitCondition(t, kb, v1.ConditionDriverVersionIncompatible, metav1.ConditionTrue, v1.ReasonDriverMajorMismatch, waitTimeout)
	if !strings.Contains(c.Message, "major 1") || !strings.Contains(c.Message, "provisioned with major 0") {
		t.Errorf("want both majors in the message, got %q", c.Message)
	}
	waitCondition(t, kb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonDriverMajorMismatch, waitTimeout)
	time.Sleep(5 * time.Second) // two re-check periods
	if n := topic(t, ns+".versioned").partitions; n != 1 {
		t.Errorf("an incompatible driver must not write to the backend, but partitions became %d", n)
	}
	if b := getBuckety(t, ns, "versioned"); *b.Status.DriverMajor != 0 || b.Status.DriverBuildVersion != "0.1.1" {
		t.Errorf("want driverMajor 0 and driverBuildVersion 0.1.1 kept, got %d %s", *b.Status.DriverMajor, b.Status.DriverBuildVersion)
	}
	secret(t, ns, "versioned-topic")
}
