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
	eventually(t, 30*time.Second, "webhook in effect", func() (bool, string) {
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

// TestWebhookRenewalDropsNoAdmission (issue 14.2): with the CA chain,
// renewal writes a new leaf signed by the same CA into the webhook's
// certificate directory (as the kubelet updates the Secret volume) while
// the injected caBundle stays the CA. Under continuous admission requests
// through the API server, no request fails, and the new leaf is served.
func TestWebhookRenewalDropsNoAdmission(t *testing.T) {
	needInfra(t)
	w := startWebhook(t)
	ns := namespace(t)
	ctx := context.Background()
	good := func(i int) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "1"}}}
	}
	eventually(t, 30*time.Second, "webhook in effect", func() (bool, string) {
		err := k8s.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: ns}, Spec: v1.BucketySpec{Backend: "nope"}}, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no such backend"), fmt.Sprint(err)
	})

	stop := make(chan struct{})
	var sent, failed atomic.Int64
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				// Dry-run creates go through admission and store nothing.
				if err := k8s.Create(ctx, good(g*1000000+i), client.DryRunAll); err != nil {
					failed.Add(1)
					mu.Lock()
					if len(failures) < 5 {
						failures = append(failures, err.Error())
					}
					mu.Unlock()
				}
			}
		}(g)
	}
	serials := map[string]bool{w.servedSerial(t): true}
	for r := 0; r < 4; r++ {
		time.Sleep(time.Second)
		before := w.servedSerial(t)
		w.issue(t)
		eventually(t, 30*time.Second, "renewed certificate served", func() (bool, string) {
			s := w.servedSerial(t)
			return s != before && !strings.HasPrefix(s, "dial"), s
		})
		serials[w.servedSerial(t)] = true
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if len(serials) < 5 {
		t.Errorf("want 4 renewals served (5 serials), got %d", len(serials))
	}
	if sent.Load() < 100 {
		t.Errorf("want continuous requests (at least 100), got %d", sent.Load())
	}
	if n := failed.Load(); n != 0 {
		t.Errorf("want zero failed admissions across renewals, got %d of %d; first: %s", n, sent.Load(), strings.Join(failures, " | "))
	}
	t.Logf("%d admission requests across 4 renewals, %d failed", sent.Load(), failed.Load())
}
