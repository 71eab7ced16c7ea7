package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/wait"
)

// webhookConfigYAML adds a backend with a name policy to the shared config.
func webhookConfigYAML() string {
	tenants := harness.Tenancy(harness.Kadm("tenants", kadmdriver.Config{SeedBrokers: broker.Addrs}), "$${namespace}.", false)
	tenants.Service = "kafka"
	return harness.ConfigYAML(append(sharedBackends("kafka", "s3"), tenants)...)
}

// webhookProcess is buckety-webhook running as a process (test/harness),
// with the fields the tests read.
type webhookProcess struct {
	*harness.Webhook
	p       *proc.Process
	addr    string
	probe   string
	metrics string
}

func (w *webhookProcess) issue(t testing.TB) { w.issueFor(t, time.Hour) }

// issueFor writes a serving certificate valid for d and returns its
// NotAfter.
func (w *webhookProcess) issueFor(t testing.TB, d time.Duration) time.Time {
	t.Helper()
	notAfter, err := w.IssueFor(d)
	if err != nil {
		t.Fatal(err)
	}
	return notAfter
}

// waitMetrics waits until the webhook's metrics server accepts connections:
// it may start after readiness is reported.
func (w *webhookProcess) waitMetrics(t testing.TB) {
	t.Helper()
	waitListening(t, w.metrics, "webhook metrics served")
}

// waitListening waits until addr accepts TCP connections, as a scraper
// retries a target that is starting.
func waitListening(t testing.TB, addr, what string) {
	t.Helper()
	wait.For(t, waitTimeout, what, func() (bool, string) {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		if err := conn.Close(); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// metric scrapes the webhook's metrics endpoint (HTTPS, with the API
// server's admin token) and returns the value of the series written exactly
// as in the exposition format, labels sorted by name.
func (w *webhookProcess) metric(t testing.TB, series string) (float64, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+w.metrics+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cp.RESTConfig.BearerToken)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook metrics: want 200, got %d: %s", resp.StatusCode, body)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", series, err)
			}
			return f, true
		}
	}
	return 0, false
}

// drainDelay is TestWebhookRejectsWithoutController's --shutdown-delay:
// the window in which it must see the webhook not ready yet serving.
const drainDelay = 10 * time.Second

// servedSerial is the serial of the certificate the webhook presents.
func (w *webhookProcess) servedSerial(t testing.TB) string {
	t.Helper()
	return w.ServedSerial()
}

func startWebhook(t testing.TB) *webhookProcess {
	t.Helper()
	return startWebhookWithConfig(t, webhookConfigYAML())
}

// startWebhookWithConfig runs the built buckety-webhook with configYAML as
// its buckety-controller.yaml, registered with the API server; args are
// added to its command line.
func startWebhookWithConfig(t testing.TB, configYAML string, args ...string) *webhookProcess {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "buckety-webhook")
	if err := harness.Build(harness.WebhookPackage, bin, ""); err != nil {
		t.Fatal(err)
	}
	// No credential env: the config references ${TEST_S3_ACCESS_KEY} and
	// ${TEST_S3_SECRET_KEY}, which the webhook must not need.
	for _, k := range []string{"TEST_S3_ACCESS_KEY", "TEST_S3_SECRET_KEY"} {
		if _, set := os.LookupEnv(k); set {
			t.Fatalf("%s must not be set in the test process", k)
		}
	}
	hw, err := harness.StartWebhook(t.TempDir(), bin, cp.Kubeconfig, configYAML, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hw.P.Stop(15 * time.Second); err != nil {
			t.Error(err)
		}
	})
	vwc, err := hw.Register(context.Background(), k8s, "buckety-webhook-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := vwc.Delete(context.Background(), k8s); err != nil {
			t.Error(err)
		}
	})
	return &webhookProcess{Webhook: hw, p: hw.P, addr: hw.Addr, probe: hw.Probe, metrics: hw.Metrics}
}

// replica starts another replica of w (see harness.Webhook.Replica).
func (w *webhookProcess) replica(t testing.TB) *webhookProcess {
	t.Helper()
	hw, err := w.Replica(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hw.P.Stop(15 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return &webhookProcess{Webhook: hw, p: hw.P, addr: hw.Addr, probe: hw.Probe, metrics: hw.Metrics}
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
	// The drain is observed from outside, so it lasts long enough for a
	// loaded machine to look (the harness's default is 2 s).
	w := startWebhookWithConfig(t, webhookConfigYAML(), "--shutdown-delay", drainDelay.String())
	ns := namespace(t)
	ctx := context.Background()
	// The certificate startWebhook issued (an hour), as the gauge sees it.
	served := func() time.Time {
		conn, err := tls.Dial("tcp", w.addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].NotAfter
	}
	w.waitMetrics(t)
	if got, ok := w.metric(t, "buckety_webhook_certificate_expiration_timestamp_seconds"); !ok || int64(got) != served().Unix() {
		t.Errorf("certificate expiry gauge: want %d (the served certificate's NotAfter), got %v (present %v)", served().Unix(), got, ok)
	}
	const (
		deniedCreates  = `buckety_admission_requests_total{kind="Buckety",operation="CREATE",result="denied"}`
		allowedCreates = `buckety_admission_requests_total{kind="Buckety",operation="CREATE",result="allowed"}`
		deniedAccesses = `buckety_admission_requests_total{kind="BucketyAccess",operation="CREATE",result="denied"}`
		errored        = `buckety_admission_requests_total{kind="Buckety",operation="CREATE",result="error"}`
	)
	before := map[string]float64{}
	for _, s := range []string{deniedCreates, allowedCreates, deniedAccesses, errored} {
		v, ok := w.metric(t, s)
		if !ok {
			t.Errorf("want series %s on the webhook's /metrics from the start", s)
		}
		before[s] = v
	}
	c := newWarningClient(t)
	b := func(name, backend, tmpl string, params, labels map[string]string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Spec: v1.BucketySpec{Backend: backend, Name: tmpl, Parameters: params}}
	}
	// The API server may take a moment to pick the configuration up.
	wait.For(t, waitTimeout, "webhook in effect", func() (bool, string) {
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
		{"defaultAccess on a name too long to label its Secret", func() *v1.Buckety {
			o := b("l"+strings.Repeat("o", 63), "kafka", "", nil, nil)
			o.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "long"}
			return o
		}(), []string{`metadata.name: Invalid value: "lo`, `is 64 characters, more than the 63 a label value holds: buckety labels the access's Secret with the access's name (buckety.yolean.se/access), and spec.defaultAccess names its BucketyAccess after the Buckety`}},
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

	// A value the typed object cannot hold (a duration that does not
	// parse) is refused naming its field: the mutating webhook, which
	// runs before schema validation, leaves it to the schema instead of
	// answering with the decoder's "time: invalid duration".
	t.Run("a drain interval that does not parse names its field", func(t *testing.T) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1.GroupVersion.String(), "kind": "Buckety",
			"metadata": map[string]any{"name": "soon", "namespace": ns},
			"spec":     map[string]any{"backend": "kafka", "drain": map[string]any{"request": "r1", "interval": "soon"}},
		}}
		err := c.Create(ctx, u)
		if err == nil || !strings.Contains(err.Error(), "spec.drain.interval") || !strings.Contains(err.Error(), `"soon"`) {
			t.Errorf("want refused naming spec.drain.interval and its value, got %v", err)
		}
		// One that looks like a duration but overflows Go's (about 292
		// years): the schema's bounds name the field too, so no such
		// value reaches a typed decoder (the webhook's, or the
		// controller's cache, whose list of every Buckety it would fail).
		// On a backend that allows drains, so that the interval is all
		// that is wrong: the webhook judges a create before the schema
		// does, and on kafka it refuses spec.drain itself first.
		for _, v := range []string{"9999999999h", "999999h999999h9s"} {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1.GroupVersion.String(), "kind": "Buckety",
				"metadata": map[string]any{"name": "forever", "namespace": ns},
				"spec":     map[string]any{"backend": "s3", "drain": map[string]any{"request": "r1", "slowInterval": v}},
			}}
			err := c.Create(ctx, u)
			if err == nil || !strings.Contains(err.Error(), "spec.drain.slowInterval") {
				t.Errorf("%s: want refused naming spec.drain.slowInterval, got %v", v, err)
			}
		}
	})

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
	wait.For(t, waitTimeout, "Buckety in the webhook's cache", func() (bool, string) {
		err := c.Create(ctx, acc.DeepCopy(), client.DryRunAll)
		w := c.take()
		return err == nil && strings.Contains(w, "role ReadOnly is not enforced"), fmt.Sprint(err, w)
	})
	bad := acc.DeepCopy()
	bad.Name, bad.Spec.Parameters = "bad-reader", map[string]string{"group": "x"}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), `spec.parameters[group]`) {
		t.Errorf("access with an unknown parameter: want rejected, got %v", err)
	}
	long := acc.DeepCopy()
	long.Name = "l" + strings.Repeat("o", 63)
	if err := c.Create(ctx, long); err == nil || !strings.Contains(err.Error(), `metadata.name: Invalid value: "lo`) ||
		!strings.Contains(err.Error(), "is 64 characters, more than the 63 a label value holds: buckety labels the access's Secret with the access's name (buckety.yolean.se/access)") {
		t.Errorf("access named with 64 characters: want rejected naming metadata.name, got %v", err)
	}

	// Each decision above is counted under its result: the probes of
	// "webhook in effect" and the rejected table are denied creates, good
	// was an allowed create, bad and long denied accesses; nothing errored.
	for _, c := range []struct {
		series string
		min    float64
	}{{deniedCreates, float64(len(rejected) + 1)}, {allowedCreates, 1}, {deniedAccesses, 2}} {
		if v, _ := w.metric(t, c.series); v-before[c.series] < c.min {
			t.Errorf("%s: want at least %g more, got %g more", c.series, c.min, v-before[c.series])
		}
	}
	if v, _ := w.metric(t, errored); v != before[errored] {
		t.Errorf("%s: want unchanged, got %g -> %g", errored, before[errored], v)
	}

	// A renewed certificate is served without a restart, and the expiry
	// gauge follows it.
	beforeSerial := w.servedSerial(t)
	renewed := w.issueFor(t, 3*time.Hour)
	wait.For(t, waitTimeout, "renewed certificate served", func() (bool, string) {
		s := w.servedSerial(t)
		return s != beforeSerial && !strings.HasPrefix(s, "dial"), s
	})
	wait.For(t, waitTimeout, "expiry gauge updated", func() (bool, string) {
		got, _ := w.metric(t, "buckety_webhook_certificate_expiration_timestamp_seconds")
		return int64(got) == renewed.Unix(), fmt.Sprintf("want %d, got %v", renewed.Unix(), got)
	})
	if err := c.Create(ctx, b("after-rotation", "nope", "", nil, nil)); err == nil || !strings.Contains(err.Error(), "no such backend") {
		t.Errorf("after rotation: want the webhook still rejecting, got %v", err)
	}

	// Graceful shutdown: on SIGTERM it is not ready but still serves during
	// the delay, then exits 0.
	if err := w.p.Signal(); err != nil {
		t.Fatal(err)
	}
	// Not ready at once; after the delay it exits and nothing answers, so
	// this wait ends with it.
	wait.For(t, drainDelay, "not ready while draining", func() (bool, string) {
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
	wait.For(t, waitTimeout, "clean exit", func() (bool, string) {
		done, err := w.p.Exited()
		if done && err != nil {
			t.Fatalf("want exit 0, got %v\n%s", err, w.p.Tail(20))
		}
		return done, "running"
	})
}
