package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// envOnlyConfig is a config the controller accepts with its environment and
// files, using ${VAR} outside the credential fields and files the webhook
// does not mount: the README's kadm example, an s3 endpoint and CA from the
// environment.
const envOnlyConfig = `backends:
- name: kafka
  driver: kadm
  config:
    seedBrokers: ["${HARDENING_KAFKA_BOOTSTRAP}"]
    bootstrap: ${HARDENING_KAFKA_PUBLIC}
    tls:
      caFile: kafka-ca.pem
      certFile: /etc/kafka/client.crt
      keyFile: /etc/kafka/client.key
      serverName: kafka.internal
    sasl:
      mechanism: SCRAM-SHA-512
      username: ${HARDENING_KAFKA_USER}
      password: ${HARDENING_KAFKA_PASSWORD}
  namePolicy:
    prefix: "$${namespace}."
- name: s3
  driver: s3
  config:
    implementation: minio
    endpoint: ${HARDENING_S3_ENDPOINT}
    ca: ${HARDENING_S3_CA}
    accessKeyID: ${HARDENING_S3_KEY}
    secretAccessKey: ${HARDENING_S3_SECRET}
`

// TestWebhookStartsWithEnvironmentConfig (issue 14.1): the built webhook,
// with no environment for the config's variables and none of its files,
// starts and admits a valid Buckety through the real API server over TLS,
// and still rejects an invalid one.
func TestWebhookStartsWithEnvironmentConfig(t *testing.T) {
	needInfra(t)
	for _, k := range []string{"HARDENING_KAFKA_BOOTSTRAP", "HARDENING_KAFKA_PUBLIC", "HARDENING_KAFKA_USER", "HARDENING_KAFKA_PASSWORD", "HARDENING_S3_ENDPOINT", "HARDENING_S3_CA", "HARDENING_S3_KEY", "HARDENING_S3_SECRET"} {
		if _, set := os.LookupEnv(k); set {
			t.Fatalf("%s must not be set in the test process", k)
		}
	}
	startWebhookWithConfig(t, envOnlyConfig)
	ns := namespace(t)
	ctx := context.Background()
	c := newWarningClient(t)
	bad := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "someone-else.orders"}}
	wait.For(t, waitTimeout, "webhook in effect", func() (bool, string) {
		err := c.Create(ctx, bad.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "only allows names starting with ${namespace}."), fmt.Sprint(err)
	})
	for _, b := range []*v1.Buckety{
		{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", Parameters: map[string]string{"partitions": "3"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-${name}", Parameters: map[string]string{"versioning": "true"}}},
	} {
		if err := c.Create(ctx, b); err != nil {
			t.Errorf("Buckety %s on backend %s: want admitted, got %v", b.Name, b.Spec.Backend, err)
		}
	}
	if err := c.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", Parameters: map[string]string{"partitions": "0"}}}); err == nil || !strings.Contains(err.Error(), "spec.parameters[partitions]") {
		t.Errorf("want a bad parameter still rejected, got %v", err)
	}
}

// admissionLoad sends dry-run creates of valid Bucketies in ns through the
// API server (and so through the webhook) from four goroutines until stop
// is called, which reports how many were sent and how many failed, with the
// first failures.
func admissionLoad(ns string) (stop func() (sent, failed int64, first []string)) {
	ctx := context.Background()
	good := func(i int) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "1"}}}
	}
	done := make(chan struct{})
	var sentN, failedN atomic.Int64
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				sentN.Add(1)
				// Dry-run creates go through admission and store nothing.
				if err := k8s.Create(ctx, good(g*1000000+i), client.DryRunAll); err != nil {
					failedN.Add(1)
					mu.Lock()
					if len(failures) < 5 {
						failures = append(failures, err.Error())
					}
					mu.Unlock()
				}
			}
		}(g)
	}
	return func() (int64, int64, []string) {
		close(done)
		wg.Wait()
		return sentN.Load(), failedN.Load(), failures
	}
}

// waitWebhookInEffect waits until the API server calls the webhook.
func waitWebhookInEffect(t *testing.T, ns string) {
	t.Helper()
	wait.For(t, waitTimeout, "webhook in effect", func() (bool, string) {
		err := k8s.Create(context.Background(), &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}, Spec: v1.BucketySpec{Backend: "nope"}}, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no such backend"), fmt.Sprint(err)
	})
}

// TestWebhookRenewalDropsNoAdmission (issue 14.2): with the CA chain,
// renewal writes a new leaf signed by the same CA into the webhook's
// certificate directory (as the kubelet updates the Secret volume) while
// the injected caBundle stays the CA. Under continuous admission requests
// through the API server, no request fails, and the new leaf is served.
func TestWebhookRenewalDropsNoAdmission(t *testing.T) {
	needInfra(t)
	w := startWebhook(t)
	ns := namespace(t)
	waitWebhookInEffect(t, ns)
	stop := admissionLoad(ns)
	serials := map[string]bool{w.servedSerial(t): true}
	for r := 0; r < 4; r++ {
		time.Sleep(time.Second)
		before := w.servedSerial(t)
		w.issue(t)
		wait.For(t, waitTimeout, "renewed certificate served", func() (bool, string) {
			s := w.servedSerial(t)
			return s != before && !strings.HasPrefix(s, "dial"), s
		})
		serials[w.servedSerial(t)] = true
	}
	time.Sleep(time.Second)
	sent, failed, failures := stop()
	if len(serials) < 5 {
		t.Errorf("want 4 renewals served (5 serials), got %d", len(serials))
	}
	if sent < 100 {
		t.Errorf("want continuous requests (at least 100), got %d", sent)
	}
	if failed != 0 {
		t.Errorf("want zero failed admissions across renewals, got %d of %d; first: %s", failed, sent, strings.Join(failures, " | "))
	}
	t.Logf("%d admission requests across 4 renewals, %d failed", sent, failed)
}

// TestWebhookReplicaLossDropsNoAdmission (issue 15, run 5): two webhook
// replicas share the admission address (--reuse-port, as two Pods behind
// one Service), and the API server calls it under continuous load. Each
// replica in turn is stopped the way Kubernetes stops a Pod (SIGTERM: a
// deletion, an eviction, a rolling update; then twice a forced deletion,
// SIGKILL soon after SIGTERM) and replaced. No admission fails: the
// stopping replica turns keep-alives off, so the API server's pooled
// connection moves to the other replica, and finishes what is in flight. Then a replica crashes (SIGKILL, nothing in flight is finished):
// the figure is reported, and the webhook must still answer afterwards.
func TestWebhookReplicaLossDropsNoAdmission(t *testing.T) {
	needInfra(t)
	a := startWebhookWithConfig(t, webhookConfigYAML(), "--reuse-port")
	b := a.replica(t)
	ns := namespace(t)
	waitWebhookInEffect(t, ns)

	stop := admissionLoad(ns)
	var graceful int
	// The last two stops are forced deletions: the kubelet sends SIGTERM
	// and SIGKILLs after its 2 s minimum grace, here 1 s, inside the
	// shutdown delay (2 s in these tests, 5 s by default). The replica must
	// have moved the API server off itself by then.
	for i, r := range []**webhookProcess{&a, &b, &a, &b} {
		forced := i >= 2
		time.Sleep(time.Second)
		if err := (*r).p.Signal(); err != nil {
			t.Fatal(err)
		}
		old := (*r).p
		if forced {
			time.Sleep(time.Second)
			if err := old.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		wait.For(t, waitTimeout, "the stopped replica exits", func() (bool, string) {
			done, err := old.Exited()
			if done && err != nil && !forced {
				t.Fatalf("want exit 0, got %v\n%s", err, old.Tail(20))
			}
			return done, "running"
		})
		graceful++
		*r = a.replica(t)
	}
	time.Sleep(time.Second)
	sent, failed, failures := stop()
	if sent < 100 {
		t.Errorf("want continuous requests (at least 100), got %d", sent)
	}
	if failed != 0 {
		t.Errorf("want zero failed admissions across %d replica stops, got %d of %d; first: %s", graceful, failed, sent, strings.Join(failures, " | "))
	}
	t.Logf("replica stops (2 on SIGTERM, 2 forced): %d; admission requests: %d; failed: %d", graceful, sent, failed)

	// A crash: the kernel closes the dead replica's connections, and the
	// API server's next call dials the surviving one.
	stop = admissionLoad(ns)
	time.Sleep(time.Second)
	if err := a.p.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	sent, failed, failures = stop()
	t.Logf("replica crash (SIGKILL): admission requests: %d; failed: %d %s", sent, failed, strings.Join(failures, " | "))
	if err := k8s.Create(context.Background(), &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "after-crash", Namespace: ns}, Spec: v1.BucketySpec{Backend: "nope"}}, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "no such backend") {
		t.Errorf("after a replica crash: want the surviving replica rejecting, got %v", err)
	}
}
