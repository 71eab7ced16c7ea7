package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	appwebhook "github.com/Yolean/buckety-controller/internal/app/webhook"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
)

// webhookConfigYAML adds a backend with a name policy to the shared config.
func webhookConfigYAML() string {
	return configYAML("kafka", "s3") + `- name: tenants
  driver: kadm
  config:
    seedBrokers: [` + strings.Join(broker.Addrs, ", ") + `]
  namePolicy:
    prefix: "$${namespace}."
`
}

// webhookProcess is buckety-webhook running as a process, serving TLS with
// a certificate the test issues (standing in for cert-manager).
type webhookProcess struct {
	p       *proc.Process
	ca      *pki.CA
	certDir string
	addr    string
	probe   string
}

func (w *webhookProcess) issue(t testing.TB) {
	t.Helper()
	cert, key, err := w.ca.Issue("buckety-webhook", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Written like the kubelet updates a Secret volume: new files, renamed
	// into place.
	for name, b := range map[string][]byte{"tls.key": key, "tls.crt": cert} {
		tmp := filepath.Join(w.certDir, "."+name+".tmp")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(w.certDir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// servedSerial is the serial of the certificate the webhook presents.
func (w *webhookProcess) servedSerial(t testing.TB) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(w.ca.Cert)
	conn, err := tls.Dial("tcp", w.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

func startWebhook(t testing.TB) *webhookProcess {
	t.Helper()
	return startWebhookWithConfig(t, webhookConfigYAML())
}

// startWebhookWithConfig runs the built buckety-webhook with configYAML as
// its buckety-controller.yaml, registered with the API server.
func startWebhookWithConfig(t testing.TB, configYAML string) *webhookProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "buckety-webhook")
	if b, err := exec.Command("go", "build", "-o", bin, "github.com/Yolean/buckety-controller/cmd/buckety-webhook").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	ca, err := pki.NewCA("buckety-webhook-ca")
	if err != nil {
		t.Fatal(err)
	}
	w := &webhookProcess{ca: ca, certDir: t.TempDir()}
	w.issue(t)
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, config.Filename), []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	ports, err := proc.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	w.addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	w.probe = fmt.Sprintf("127.0.0.1:%d", ports[1])
	// No credential env: the config references ${TEST_S3_ACCESS_KEY} and
	// ${TEST_S3_SECRET_KEY}, which the webhook must not need.
	for _, k := range []string{"TEST_S3_ACCESS_KEY", "TEST_S3_SECRET_KEY"} {
		if _, set := os.LookupEnv(k); set {
			t.Fatalf("%s must not be set in the test process", k)
		}
	}
	p, err := proc.Start(t.TempDir(), "buckety-webhook", bin, []string{
		"-c", cfgDir, "--kubeconfig", cp.Kubeconfig, "--host", "127.0.0.1", "--port", fmt.Sprint(ports[0]),
		"--cert-dir", w.certDir, "--health-probe-bind-address", w.probe, "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--shutdown-delay", "2s",
	}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	w.p = p
	t.Cleanup(func() {
		if err := p.Stop(15 * time.Second); err != nil {
			t.Error(err)
		}
	})
	eventually(t, 60*time.Second, "webhook ready", func() (bool, string) {
		if done, err := p.Exited(); done {
			t.Fatalf("webhook exited: %v\n%s", err, p.Tail(30))
		}
		resp, err := http.Get("http://" + w.probe + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
	w.register(t)
	return w
}

// register points the API server at the webhook with the CA as caBundle,
// as cert-manager's CA injector would.
func (w *webhookProcess) register(t testing.TB) {
	t.Helper()
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	hook := func(name, path, resource string) admissionregistrationv1.ValidatingWebhook {
		url := "https://" + w.addr + path
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    name,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.ca.CertPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"buckety.yolean.se"}, APIVersions: []string{"v1alpha1"}, Resources: []string{resource}}}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "buckety-webhook-test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("bucketies.buckety.yolean.se", appwebhook.PathBuckety, "bucketies"),
			hook("bucketyaccesses.buckety.yolean.se", appwebhook.PathAccess, "bucketyaccesses"),
		},
	}
	create(t, vwc)
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), vwc); err != nil {
			t.Error(err)
		}
	})
}

// warningClient records the admission warnings the API server relays.
type warningClient struct {
	client.Client
	mu       sync.Mutex
	warnings []string
}

func (w *warningClient) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningClient) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.Join(w.warnings, " | ")
	w.warnings = nil
	return s
}

func newWarningClient(t testing.TB) *warningClient {
	t.Helper()
	wc := &warningClient{}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.WarningHandler = wc
	scheme, err := appcontroller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	wc.Client = c
	return wc
}

// TestWebhookRejectsWithoutController runs buckety-webhook as a process
// with no credentials and no controller anywhere, behind the real API
// server, and checks every rejection a tenant can see.
func TestWebhookRejectsWithoutController(t *testing.T) {
	needInfra(t)
	w := startWebhook(t)
	ns := namespace(t)
	ctx := context.Background()
	c := newWarningClient(t)
	b := func(name, backend, tmpl string, params, labels map[string]string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Spec: v1.BucketySpec{Backend: backend, Name: tmpl, Parameters: params}}
	}
	// The API server may take a moment to pick the configuration up.
	eventually(t, 30*time.Second, "webhook in effect", func() (bool, string) {
		err := c.Create(ctx, b("probe", "nope", "", nil, nil), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no such backend"), fmt.Sprint(err)
	})
	rejected := []struct {
		name string
		obj  *v1.Buckety
		want []string
	}{
		{"unknown backend lists the available ones", b("a", "kafak", "", nil, nil), []string{`admission webhook "bucketies.buckety.yolean.se" denied the request`, `spec.backend: Invalid value: "kafak": no such backend in the controller config; available: "kafka", "s3", "tenants"`}},
		{"template with a missing label", b("b", "kafka", "${namespace}.${name}.v${label['yolean.se/generation']}", nil, nil), []string{`the Buckety has no label "yolean.se/generation" (set metadata.labels["yolean.se/generation"])`}},
		{"template with a missing backend default", b("c", "s3", "${backend.zone}-${backend.region}", nil, nil), []string{`backend "s3" has no defaults.region`}},
		{"resolved name rejected by the driver, shown", b("d", "kafka", "__${name}", nil, nil), []string{`resolves to "__d", which driver kadm rejects`}},
		{"name policy", b("e", "tenants", "someone-else.e", nil, nil), []string{`spec.name: Forbidden: resolves to "someone-else.e", but backend tenants only allows names starting with ${namespace}.`}},
		{"every failing parameter in one response", b("f", "kafka", "", map[string]string{"partitions": "0", "replicationFactor": "three", "config.num.partitions": "3", "retentionMs": "1"}, nil), []string{
			"spec.parameters[partitions]", "spec.parameters[replicationFactor]", "spec.parameters[config.num.partitions]", "spec.parameters[retentionMs]"}},
		{"capability gating names the implementation", b("g", "s3", "", map[string]string{"jurisdiction": "eu"}, nil), []string{"jurisdiction is only supported for implementation r2, and the backend's implementation is minio"}},
		{"adoption on a backend that does not allow it", func() *v1.Buckety {
			o := b("h", "kafka", "", nil, nil)
			o.Spec.Adoption = v1.AdoptionAdopt
			return o
		}(), []string{`spec.adoption: Forbidden: Adopt is not allowed on backend "kafka": its configuration in buckety-controller.yaml does not set adoption.allow`}},
	}
	for _, r := range rejected {
		t.Run(r.name, func(t *testing.T) {
			err := c.Create(ctx, r.obj)
			if err == nil {
				t.Fatal("want rejected, got created")
			}
			for _, want := range r.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("want %q in %v", want, err)
				}
			}
		})
	}

	good := b("good", "kafka", "${namespace}.${name}.v${label['yolean.se/generation']}", map[string]string{"partitions": "3", "config.redpanda.remote.read": "true"}, map[string]string{"yolean.se/generation": "003"})
	if err := c.Create(ctx, good); err != nil {
		t.Fatalf("want a good Buckety admitted, got %v", err)
	}
	if w := c.take(); !strings.Contains(w, `"redpanda.remote.read" is not an Apache Kafka topic config`) {
		t.Errorf("want the driver's warning relayed, got %q", w)
	}
	good.Spec.Parameters["partitions"] = "1"
	good.Spec.Parameters["replicationFactor"] = "3"
	err := c.Update(ctx, good)
	for _, want := range []string{"spec.parameters[partitions]: Forbidden: can only grow (was 3, now 1)", "spec.parameters[replicationFactor]: Forbidden: is immutable after creation (was unset, now 3)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("update: want %q in %v", want, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(good), good); err != nil {
		t.Fatal(err)
	}
	// The CRD's CEL rule answers first (schema validation runs before
	// admission webhooks); the webhook's own check is the same rule for a
	// CRD installed without it (unit-tested).
	good.Spec.Backend = "s3"
	if err := c.Update(ctx, good); err == nil || !strings.Contains(err.Error(), "spec.backend") || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("update backend: want rejected as immutable, got %v", err)
	}

	// Access: ReadOnly is admitted with a warning; a bad parameter is not.
	acc := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "good"}, CredentialsSecretName: "reader", Role: v1.RoleReadOnly}}
	eventually(t, 10*time.Second, "Buckety in the webhook's cache", func() (bool, string) {
		err := c.Create(ctx, acc.DeepCopy(), client.DryRunAll)
		w := c.take()
		return err == nil && strings.Contains(w, "role ReadOnly is not enforced in v1alpha1"), fmt.Sprint(err, w)
	})
	bad := acc.DeepCopy()
	bad.Name, bad.Spec.Parameters = "bad-reader", map[string]string{"group": "x"}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), `spec.parameters[group]`) {
		t.Errorf("access with an unknown parameter: want rejected, got %v", err)
	}

	// A renewed certificate is served without a restart.
	before := w.servedSerial(t)
	w.issue(t)
	eventually(t, 30*time.Second, "renewed certificate served", func() (bool, string) {
		s := w.servedSerial(t)
		return s != before && !strings.HasPrefix(s, "dial"), s
	})
	if err := c.Create(ctx, b("after-rotation", "nope", "", nil, nil)); err == nil || !strings.Contains(err.Error(), "no such backend") {
		t.Errorf("after rotation: want the webhook still rejecting, got %v", err)
	}

	// Graceful shutdown: on SIGTERM it is not ready but still serves during
	// the delay, then exits 0.
	if err := w.p.Signal(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "not ready while draining", func() (bool, string) {
		resp, err := http.Get("http://" + w.probe + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode != 200, resp.Status
	})
	if s := w.servedSerial(t); strings.HasPrefix(s, "dial") {
		t.Errorf("want admission still served while draining, got %s", s)
	}
	eventually(t, 20*time.Second, "clean exit", func() (bool, string) {
		done, err := w.p.Exited()
		if done && err != nil {
			t.Fatalf("want exit 0, got %v\n%s", err, w.p.Tail(20))
		}
		return done, "running"
	})
}
