package scale

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/logdir"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// bins are the binaries built once per run from the tree under test.
type bins struct {
	controller, webhook, broker string
}

func buildBins(t *testing.T, dir string) bins {
	t.Helper()
	b := bins{controller: filepath.Join(dir, "buckety-controller"), webhook: filepath.Join(dir, "buckety-webhook")}
	for pkg, out := range map[string]string{harness.ControllerPackage: b.controller, harness.WebhookPackage: b.webhook} {
		if err := harness.Build(pkg, out, ""); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if b.broker, err = kafka.Binary(dir); err != nil {
		t.Fatal(err)
	}
	return b
}

// env is one fresh set of real parts for one N: a control plane, a
// request-counting broker, MinIO (and in the first, SeaweedFS), the
// webhook registered with the API server, and the controller binary under
// its generated RBAC.
type env struct {
	t    *testing.T
	dir  string
	bins bins
	// readyTimeout is how long a controller started here may take to sync
	// its caches (harness.ControllerOptions.ReadyTimeout; 0: 60 s).
	readyTimeout time.Duration
	cp           *controlplane.ControlPlane
	broker       *kafka.Broker
	// scoped is a second broker with SASL/SCRAM and ACLs enforced, the
	// cluster of backend kafka-scoped (per-access users and ACLs).
	scoped *kafka.Broker
	s3     *s3test.Server
	// iamSweepUsers is credentials.sweepUsers of backend s3w-iam (0: the
	// driver's default).
	iamSweepUsers int
	// sharedS3 and scopedS3 count what backends s3-shared and s3-scoped
	// send MinIO.
	sharedS3, scopedS3 *countingProxy
	// weed is a SeaweedFS, started when its scoped figures are measured
	// (nil otherwise); sharedWeed and iamWeed count what backends
	// s3w-shared and s3w-iam send it.
	weed                *s3test.Server
	sharedWeed, iamWeed *countingProxy
	// versity is a VersityGW with its internal IAM, started when its scoped
	// figures are measured (nil otherwise); sharedVersity and
	// scopedVersity count what backends s3v-shared and s3v-scoped send its
	// S3 port, versityAdmin what s3v-scoped sends its admin port.
	versity                                    *s3test.Server
	sharedVersity, scopedVersity, versityAdmin *countingProxy
	k8s                                        client.WithWatch
	kubeconfig                                 string
	configDir                                  string
	ctrl                                       *harness.Controller
	// more are the other replicas of a sharded run (startReplicas); ctrl
	// is the first.
	more []*harness.Controller
	// ctrlEnv is more environment for every controller run
	// (SCALE_CONTROLLER_ENV).
	ctrlEnv []string
	// profileDir is where profiles are saved (SCALE_PROFILE_DIR); "":
	// none.
	profileDir string
	hook       *harness.Webhook
	// own counts the Kafka requests the harness itself sends, per API, so
	// they are taken out of the broker's counts.
	own *ownRequests
	kc  *kgo.Client
}

// envParts say which parts beyond the control plane and the counting
// broker an environment starts.
type envParts struct {
	// scoped is the second broker, with SASL/SCRAM and ACLs.
	scoped bool
	// s3 is MinIO with its two counting proxies; weed is SeaweedFS with
	// its two, versity VersityGW with its three (both need s3).
	s3, weed, versity bool
	// kcm runs kube-controller-manager beside the API server: garbage
	// collection of owned Secrets and namespace deletion.
	kcm bool
	// iamSweepUsers is credentials.sweepUsers of backend s3w-iam (0: the
	// driver's default).
	iamSweepUsers int
}

// newEnvWith starts the control plane, the counting broker and the parts
// p names, and writes the controller's files for them.
func newEnvWith(t *testing.T, b bins, name string, p envParts) *env {
	t.Helper()
	dir := logdir.TempDir(t, "bkt-scale-"+name+"-", "scale")
	e := &env{t: t, dir: dir, bins: b, own: &ownRequests{counts: map[string]int64{}}, iamSweepUsers: p.iamSweepUsers}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.cp = harness.ControlPlane(ctx, t, dir, p.kcm)
	var err error
	if err := os.MkdirAll(filepath.Join(dir, "kafka"), 0o755); err != nil {
		t.Fatal(err)
	}
	if e.broker, err = kafka.StartIn(filepath.Join(dir, "kafka"), b.broker, kafka.Options{CountRequests: true}, false); err != nil {
		t.Fatal(err)
	}
	harness.StopAtCleanup(t, "broker", e.broker.Stop)
	if p.scoped {
		if err := os.MkdirAll(filepath.Join(dir, "kafka-scoped"), 0o755); err != nil {
			t.Fatal(err)
		}
		scopedOpts := kafka.Options{CountRequests: true, ACLs: true, SASL: []string{"SCRAM-SHA-512:buckety:" + scopedPassword}}
		if e.scoped, err = kafka.StartIn(filepath.Join(dir, "kafka-scoped"), b.broker, scopedOpts, false); err != nil {
			t.Fatal(err)
		}
		harness.StopAtCleanup(t, "scoped broker", e.scoped.Stop)
	}
	if p.s3 {
		if e.s3, err = s3test.StartIn(filepath.Join(dir, "minio"), "minio", s3test.Options{PublicMetrics: true}, false); err != nil {
			t.Fatal(err)
		}
		harness.StopAtCleanup(t, "minio", e.s3.Stop)
		e.sharedS3 = startCountingProxy(t, e.s3.Endpoint)
		e.scopedS3 = startCountingProxy(t, e.s3.Endpoint)
	}
	if p.s3 && p.weed {
		if e.weed, err = s3test.StartIn(filepath.Join(dir, "seaweedfs"), "seaweedfs", s3test.Options{}, false); err != nil {
			t.Fatal(err)
		}
		harness.StopAtCleanup(t, "seaweedfs", e.weed.Stop)
		e.sharedWeed = startCountingProxy(t, e.weed.Endpoint)
		e.iamWeed = startCountingProxy(t, e.weed.Endpoint)
	}
	if p.s3 && p.versity {
		if e.versity, err = s3test.StartIn(filepath.Join(dir, "versitygw"), "versitygw", s3test.Options{IAM: true}, false); err != nil {
			t.Fatal(err)
		}
		harness.StopAtCleanup(t, "versitygw", e.versity.Stop)
		e.sharedVersity = startCountingProxy(t, e.versity.Endpoint)
		e.scopedVersity = startCountingProxy(t, e.versity.Endpoint)
		e.versityAdmin = startAdminProxy(t, e.versity.AdminEndpoint)
	}
	scheme, err := appcontroller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if e.k8s, err = client.NewWithWatch(e.unlimited(), client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	if e.kc, err = kgo.NewClient(kgo.SeedBrokers(e.broker.Addrs...), kgo.WithHooks(e.own)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.kc.Close)
	e.kubeconfig, e.configDir = harness.ControllerFiles(ctx, t, e.cp, e.k8s, dir, e.configYAML())
	t.Cleanup(e.stopController)
	return e
}

// unlimited is the admin REST config with client-go's limiter off, so the
// harness measures the API server, not its own client.
func (e *env) unlimited() *rest.Config {
	rc := rest.CopyConfig(e.cp.RESTConfig)
	rc.QPS, rc.Burst = -1, 0
	return rc
}

// scaleInstallation is the installation every controller of the benchmark
// runs as, set in its config as a cluster rebuilt from git would have it.
const scaleInstallation = "scale"

func (e *env) configYAML() string {
	s3 := func(name, impl, endpoint, region, keyVar string, issue bool) config.Backend {
		c := harness.S3Server(impl, endpoint, region, keyVar+"_ACCESS_KEY", keyVar+"_SECRET_KEY")
		if issue {
			c.Credentials = &s3driver.Credentials{}
		}
		return harness.S3(name, c)
	}
	bs := []config.Backend{harness.Kadm("kafka", kadmdriver.Config{SeedBrokers: e.broker.Addrs})}
	if e.scoped != nil {
		// A short orphan grace bounds the rebuild's wait for the first
		// run's principals to be revoked (rebuildFigures).
		bs = append(bs, harness.OrphanGrace(harness.Kadm(scopedBackend, kadmdriver.Config{SeedBrokers: e.scoped.Addrs,
			SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "${SCALE_KAFKA_PASSWORD}"}}), scopedOrphanGrace))
	}
	if e.s3 != nil {
		bs = append(bs, s3("s3", s3driver.ImplMinIO, e.s3.Endpoint, e.s3.Region, "SCALE_S3", false),
			s3(sharedS3Backend, s3driver.ImplMinIO, e.sharedS3.URL, e.s3.Region, "SCALE_S3", false),
			s3(scopedS3Backend, s3driver.ImplMinIO, e.scopedS3.URL, e.s3.Region, "SCALE_S3", true))
	}
	// SeaweedFS's two backends, when it runs: its admin identity's keys for
	// every access, and an IAM user per access (the IAM API is the S3
	// endpoint's, so the proxy counts it too).
	if e.weed != nil {
		iam := harness.S3Server(s3driver.ImplSeaweedFS, e.iamWeed.URL, e.weed.Region, "SCALE_WEED_ACCESS_KEY", "SCALE_WEED_SECRET_KEY")
		iam.Credentials = &s3driver.Credentials{SweepUsers: e.iamSweepUsers}
		iamWeed := harness.S3(iamWeedBackend, iam)
		bs = append(bs, s3(sharedWeedBackend, s3driver.ImplSeaweedFS, e.sharedWeed.URL, e.weed.Region, "SCALE_WEED", false), iamWeed)
	}
	// VersityGW's two backends, when it runs: the root keys for every
	// access, and a gateway user per access, made through the admin port's
	// proxy.
	if e.versity != nil {
		scoped := harness.S3Server(s3driver.ImplVersityGW, e.scopedVersity.URL, e.versity.Region, "SCALE_VERSITY_ACCESS_KEY", "SCALE_VERSITY_SECRET_KEY")
		scoped.Credentials = &s3driver.Credentials{AdminEndpoint: e.versityAdmin.URL}
		bs = append(bs, s3(sharedVersityBackend, s3driver.ImplVersityGW, e.sharedVersity.URL, e.versity.Region, "SCALE_VERSITY", false),
			harness.S3(scopedVersityBackend, scoped))
	}
	// Named, not derived from the cluster: the rebuilt control plane's
	// controller must be the same installation as the first's.
	return harness.InstallationConfigYAML(scaleInstallation, bs...)
}

// startWebhook runs buckety-webhook as a process and registers it, as in
// production, so every Buckety the benchmark creates is admitted by it.
func (e *env) startWebhook() {
	e.t.Helper()
	w, err := harness.StartWebhook(filepath.Join(e.dir, "webhook"), e.bins.webhook, e.cp.Kubeconfig, e.configYAML())
	if err != nil {
		e.t.Fatal(err)
	}
	e.hook = w
	e.t.Cleanup(func() {
		if err := w.P.Stop(15 * time.Second); err != nil {
			e.t.Errorf("stop webhook: %v", err)
		}
	})
	if _, err := w.Register(context.Background(), e.k8s, "buckety-webhook-scale"); err != nil {
		e.t.Fatal(err)
	}
}

// startController starts the controller binary as its ServiceAccount,
// leader election off (one replica), metrics over plain HTTP and pprof on
// loopback for the harness to read.
func (e *env) startController(args []string) {
	e.t.Helper()
	c, err := e.launchController(e.dir, append([]string{"--leader-elect=false"}, args...))
	if err != nil {
		e.t.Fatal(err)
	}
	e.ctrl = c
}

// launchController starts one controller process logging under dir, with
// args, and waits until it is ready.
func (e *env) launchController(dir string, args []string) (*harness.Controller, error) {
	return harness.StartController(harness.ControllerOptions{
		Dir: dir, Bin: e.bins.controller, Kubeconfig: e.kubeconfig, ConfigDir: e.configDir,
		Args:            args,
		Env:             append(e.backendEnv(), e.ctrlEnv...),
		MetricsInsecure: true, Pprof: supportsFlag(e.bins.controller, "pprof-bind-address"),
		ReadyTimeout: e.readyTimeout,
	})
}

// controllers are the running controller processes: ctrl, then more.
func (e *env) controllers() []*harness.Controller {
	if e.ctrl == nil {
		return nil
	}
	return append([]*harness.Controller{e.ctrl}, e.more...)
}

// backendEnv is what the controller's config refers to.
func (e *env) backendEnv() []string {
	out := []string{"SCALE_KAFKA_PASSWORD=" + scopedPassword}
	if e.s3 != nil {
		out = append(out, "SCALE_S3_ACCESS_KEY="+e.s3.AccessKey, "SCALE_S3_SECRET_KEY="+e.s3.SecretKey)
	}
	if e.weed != nil {
		out = append(out, "SCALE_WEED_ACCESS_KEY="+e.weed.AccessKey, "SCALE_WEED_SECRET_KEY="+e.weed.SecretKey)
	}
	if e.versity != nil {
		out = append(out, "SCALE_VERSITY_ACCESS_KEY="+e.versity.AccessKey, "SCALE_VERSITY_SECRET_KEY="+e.versity.SecretKey)
	}
	return out
}

// stopController stops every controller process (each replica of a
// sharded run), all at once, as a Deployment's pods are deleted together.
func (e *env) stopController() {
	var wg sync.WaitGroup
	for _, c := range e.controllers() {
		if done, _ := c.P.Exited(); done {
			continue // killed on purpose (the shard-leader row)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.P.Stop(30 * time.Second); err != nil {
				e.t.Errorf("stop controller: %v", err)
			}
			if done, err := c.P.Exited(); !done || err != nil {
				e.t.Errorf("controller: want a clean exit on SIGTERM, got exited=%v err=%v\n%s", done, err, c.P.Tail(20))
			}
		}()
	}
	wg.Wait()
	e.ctrl, e.more = nil, nil
}

// supportsFlag reports whether the binary's usage lists --name, so the
// harness works against a controller built before a flag existed.
func supportsFlag(bin, name string) bool {
	out, _ := execOutput(bin, "help") // help exits 0; its text is what matters
	return strings.Contains(out, "-"+name+" ")
}

// ownRequests counts the Kafka requests the harness's client writes, per
// API name (kgo's broker-write hook).
type ownRequests struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (o *ownRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	o.mu.Lock()
	o.counts[kmsg.NameForKey(key)]++
	o.mu.Unlock()
}

func (o *ownRequests) snapshot() map[string]int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]int64, len(o.counts))
	for k, v := range o.counts {
		out[k] = v
	}
	return out
}

// kafkaCounter measures the controller's Kafka requests over a window: the
// broker's counts minus the harness's own.
type kafkaCounter struct {
	e           *env
	broker, own map[string]int64
}

func (e *env) kafkaStart() *kafkaCounter {
	e.t.Helper()
	b, err := e.broker.Requests()
	if err != nil {
		e.t.Fatal(err)
	}
	return &kafkaCounter{e: e, broker: b, own: e.own.snapshot()}
}

// since returns the controller's requests per API since kafkaStart.
func (k *kafkaCounter) since() counts {
	k.e.t.Helper()
	b, err := k.e.broker.Requests()
	if err != nil {
		k.e.t.Fatal(err)
	}
	own := k.e.own.snapshot()
	out := counts{}
	for api, n := range b {
		if d := n - k.broker[api] - (own[api] - k.own[api]); d != 0 {
			out[api] = d
		}
	}
	return out
}

// counts are request counts by a key (an API, a verb).
type counts map[string]int64

func (c counts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// String lists the counts, largest first: "7 (Metadata 4, CreateTopics 3)".
func (c counts) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, c[k])
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", c.total(), strings.Join(parts, ", "))
}

// get fetches url (with the admin token when auth is set) and returns the
// body.
func (e *env) get(url string, auth bool) (string, error) {
	return e.getWithin(url, auth, 30*time.Second)
}

// getWithin is get with a timeout of its own.
func (e *env) getWithin(url string, auth bool, timeout time.Duration) (string, error) {
	hc := &http.Client{Timeout: timeout}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	if auth {
		pool := x509.NewCertPool()
		pool.AddCert(e.cp.CA.Cert)
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
		req.Header.Set("Authorization", "Bearer "+e.cp.RESTConfig.BearerToken)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

// sample is one Prometheus text-format sample.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// samples parses the samples of the metric families named in names from a
// Prometheus text exposition.
func samples(text string, names ...string) ([]sample, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []sample
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if !want[name] {
			continue
		}
		s := sample{name: name, labels: map[string]string{}}
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				return nil, fmt.Errorf("metric line %q: unterminated labels", line)
			}
			for _, kv := range splitLabels(rest[1:end]) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, fmt.Errorf("metric line %q: label %q", line, kv)
				}
				uq, err := strconv.Unquote(v)
				if err != nil {
					return nil, fmt.Errorf("metric line %q: label %q: %w", line, kv, err)
				}
				s.labels[k] = uq
			}
			rest = rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("metric line %q: no value", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQuote, esc, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case esc:
			esc = false
		case s[i] == '\\':
			esc = true
		case s[i] == '"':
			inQuote = !inQuote
		case s[i] == ',' && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// writeResources are the resources whose writes are the controller's work:
// its own kinds, the claims, Secrets and events.
var writeResources = map[string]bool{"bucketies": true, "bucketyaccesses": true, "bucketyclaims": true, "secrets": true, "events": true, "bucketycredentials": true}

// apiWrites reads the API server's apiserver_request_total and returns the
// non-dry-run writes to writeResources by "VERB resource[/subresource]".
func (e *env) apiWrites() counts {
	e.t.Helper()
	return e.apiWritesOf(writeResources)
}

// apiWritesOf is apiWrites for the writes to resources.
func (e *env) apiWritesOf(resources map[string]bool) counts {
	e.t.Helper()
	writes, _ := e.apiRequestsOf(resources)
	return writes
}

// apiRequestsOf counts, from one scrape, the API server's requests to
// resources by verb and resource: its non-dry-run writes, and every other
// request (GET, LIST, WATCH), which a controller sends when it reads past
// its cache.
func (e *env) apiRequestsOf(resources map[string]bool) (writes, reads counts) {
	e.t.Helper()
	writes, reads = counts{}, counts{}
	for _, s := range e.apiRequests() {
		l := s.labels
		if !resources[l["resource"]] || l["dry_run"] != "" {
			continue
		}
		k := requestKey(l)
		switch {
		case isWrite(l["verb"]):
			writes[k] += int64(s.value)
		default:
			reads[k] += int64(s.value)
		}
	}
	return writes, reads
}

// secretGets is how many single-Secret GETs the API server has served (a
// controller's fresh reads of a Secret's data; lists are LIST).
func (e *env) secretGets() int64 {
	e.t.Helper()
	var n int64
	for _, s := range e.apiRequests() {
		if s.labels["verb"] == "GET" && s.labels["resource"] == "secrets" && s.labels["subresource"] == "" {
			n += int64(s.value)
		}
	}
	return n
}

// requestKey names the requests of an API server series' labels as
// apiWrites keys them: "VERB resource[/subresource]".
func requestKey(l map[string]string) string {
	k := l["verb"] + " " + l["resource"]
	if l["subresource"] != "" {
		k += "/" + l["subresource"]
	}
	return k
}

// isWrite reports whether an API server series' verb is a write.
func isWrite(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE", "APPLY":
		return true
	}
	return false
}

// apiRequests reads the API server's apiserver_request_total series.
func (e *env) apiRequests() []sample {
	e.t.Helper()
	return e.apiServerSamples("apiserver_request_total")
}

// apiServerSamples scrapes the API server's series of one name.
func (e *env) apiServerSamples(name string) []sample {
	e.t.Helper()
	body, err := e.get(e.cp.URL+"/metrics", true)
	if err != nil {
		e.t.Fatal(err)
	}
	ss, err := samples(body, name)
	if err != nil {
		e.t.Fatal(err)
	}
	return ss
}

// apiWriteSeconds is, from one scrape, the API server's time in the
// non-dry-run writes to writeResources so far, by "VERB
// resource[/subresource]" as apiWrites keys them
// (apiserver_request_duration_seconds_sum: admission, webhooks included,
// and the storage write).
func (e *env) apiWriteSeconds() map[string]float64 {
	e.t.Helper()
	out := map[string]float64{}
	for _, s := range e.apiServerSamples("apiserver_request_duration_seconds_sum") {
		l := s.labels
		if writeResources[l["resource"]] && l["dry_run"] == "" && isWrite(l["verb"]) {
			out[requestKey(l)] += s.value
		}
	}
	return out
}

// minus returns c - base, dropping zeros.
func (c counts) minus(base counts) counts {
	out := counts{}
	for k, v := range c {
		if d := v - base[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// controllerMetrics scrapes the controller's metrics (plain HTTP), every
// live replica's in a sharded run.
func (e *env) controllerMetrics(names ...string) []sample {
	e.t.Helper()
	var out []sample
	for _, c := range e.controllers() {
		if done, _ := c.P.Exited(); !done {
			out = append(out, e.metricsAt(c.Metrics, names...)...)
		}
	}
	return out
}

// metricsAt scrapes the plain-HTTP metrics served on addr (host:port).
func (e *env) metricsAt(addr string, names ...string) []sample {
	e.t.Helper()
	body, err := e.get("http://"+addr+"/metrics", false)
	if err != nil {
		e.t.Fatal(err)
	}
	ss, err := samples(body, names...)
	if err != nil {
		e.t.Fatal(err)
	}
	return ss
}

// readyWatch records when each object of a kind in a namespace is first
// seen Ready for its generation, from a watch (polling N objects would load
// the API server being measured).
type readyWatch struct {
	mu      sync.Mutex
	readyAt map[string]time.Time
	// notReady describes the last state seen of each object not yet Ready.
	notReady map[string]string
}

func isReady(b *v1.Buckety) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && b.Status.ObservedGeneration == b.Generation && c.ObservedGeneration == b.Generation
}

// bucketyReady is isReady for a watch, with a description of a Buckety
// that is not Ready.
func bucketyReady(o client.Object) (bool, string) {
	b, ok := o.(*v1.Buckety)
	if !ok {
		return false, fmt.Sprintf("not a Buckety: %T", o)
	}
	if isReady(b) {
		return true, ""
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c != nil {
		return false, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return false, "no Ready condition"
}

// watchReady starts watching the Bucketies of namespace ns; it stops when
// ctx ends.
func (e *env) watchReady(ctx context.Context, ns string) *readyWatch {
	e.t.Helper()
	return e.watchReadyOf(ctx, ns, func() client.ObjectList { return &v1.BucketyList{} }, bucketyReady)
}

// watchReadyOf watches the objects that newList lists in namespace ns,
// judging each with ready; it stops when ctx ends.
func (e *env) watchReadyOf(ctx context.Context, ns string, newList func() client.ObjectList, ready func(client.Object) (bool, string)) *readyWatch {
	e.t.Helper()
	w := &readyWatch{readyAt: map[string]time.Time{}, notReady: map[string]string{}}
	// The list is for its resource version only: one item is enough, and
	// at 100,000 objects a whole list would load the API server measured.
	list := newList()
	if err := e.k8s.List(ctx, list, client.InNamespace(ns), client.Limit(1)); err != nil {
		e.t.Fatal(err)
	}
	rv := list.GetResourceVersion()
	go func() {
		for ctx.Err() == nil {
			wi, err := e.k8s.Watch(ctx, newList(), client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				if ctx.Err() == nil {
					time.Sleep(200 * time.Millisecond)
				}
				continue
			}
			for ev := range wi.ResultChan() {
				if ev.Type == watch.Error {
					// Expired: watch again without a resource version, which
					// starts with every object as it is now; objects already
					// Ready keep their times.
					rv = ""
					break
				}
				o, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				rv = o.GetResourceVersion()
				if ev.Type == watch.Bookmark {
					continue
				}
				ok, desc := ready(o)
				w.mu.Lock()
				if _, seen := w.readyAt[o.GetName()]; !seen {
					if ok {
						w.readyAt[o.GetName()] = time.Now()
						delete(w.notReady, o.GetName())
					} else {
						w.notReady[o.GetName()] = desc
					}
				}
				w.mu.Unlock()
			}
			wi.Stop()
		}
	}()
	return w
}

// wait blocks until n objects are Ready or timeout passes, and returns
// the Ready times (sorted) and a description of those not Ready.
// A wait longer than a minute logs how many are Ready each minute, so a
// run stopped before the end (make bench-scale-100k's 100,000) still
// says how far it got.
func (w *readyWatch) wait(n int, timeout time.Duration) ([]time.Time, string) {
	start := time.Now()
	deadline := start.Add(timeout)
	next := start.Add(time.Minute)
	for {
		w.mu.Lock()
		got := len(w.readyAt)
		w.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			break
		}
		if now := time.Now(); now.After(next) {
			fmt.Printf("scale: %d of %d Ready after %s\n", got, n, now.Sub(start).Round(time.Second))
			next = next.Add(time.Minute)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	times := make([]time.Time, 0, len(w.readyAt))
	for _, t := range w.readyAt {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	var missing []string
	for name, desc := range w.notReady {
		if len(missing) < 5 {
			missing = append(missing, name+": "+desc)
		}
	}
	return times, strings.Join(missing, "; ")
}

// topicConfigs describes the topics' configs with the harness's client.
func (e *env) topicConfigs(ctx context.Context, topics []string) (kadm.ResourceConfigs, error) {
	return kadm.NewClient(e.kc).DescribeTopicConfigs(ctx, topics...)
}

// topics lists the broker's topics (harness.Topics); its requests count
// as the harness's own.
func (e *env) topics(ctx context.Context) (map[string]bool, error) {
	return harness.Topics(ctx, e.broker.Addrs, kgo.WithHooks(e.own))
}

// parallel runs f(i) for i in [0, n) on workers goroutines and returns the
// first error.
func parallel(n, workers int, f func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// execOutput runs bin with args and returns its combined output.
func execOutput(bin string, args ...string) (string, error) {
	b, err := exec.Command(bin, args...).CombinedOutput()
	return string(b), err
}
