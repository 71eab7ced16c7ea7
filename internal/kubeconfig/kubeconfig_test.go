package kubeconfig

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`

func TestRateLimitFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		args      []string
		err       string
		qps       float32
		burst     int
		limiterOn bool
	}{
		{name: "default is off", qps: -1, burst: 0},
		{name: "explicit off", args: []string{"--kube-api-qps", "-1", "--kube-api-burst", "50"}, qps: -1, burst: 0},
		{name: "qps with default burst", args: []string{"--kube-api-qps", "50"}, qps: 50, burst: 100, limiterOn: true},
		{name: "fractional qps rounds the burst up", args: []string{"--kube-api-qps", "2.5"}, qps: 2.5, burst: 5, limiterOn: true},
		{name: "qps and burst", args: []string{"--kube-api-qps=200", "--kube-api-burst=400"}, qps: 200, burst: 400, limiterOn: true},
		{name: "zero qps", args: []string{"--kube-api-qps", "0"}, err: "--kube-api-qps 0: want a positive number of requests per second, or -1 for no client-side limit (0 would mean client-go's default of 5 per second)"},
		{name: "negative burst", args: []string{"--kube-api-qps", "10", "--kube-api-burst", "-3"}, err: "--kube-api-burst -3: want 0 (twice --kube-api-qps) or a positive number"},
		{name: "not a number", args: []string{"--kube-api-qps", "NaN"}, err: "--kube-api-qps NaN: want a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var r RateLimit
			r.BindFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			err := r.Validate()
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want error %q, got %v", c.err, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("want valid, got %v", err)
			}
			rc, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if rc.QPS != 0 || rc.Burst != 0 {
				t.Fatalf("precondition: want a kubeconfig without a rate limit, got QPS %v burst %d", rc.QPS, rc.Burst)
			}
			r.Apply(rc)
			if rc.QPS != c.qps || rc.Burst != c.burst {
				t.Errorf("want QPS %v burst %d, got QPS %v burst %d", c.qps, c.burst, rc.QPS, rc.Burst)
			}
			// What client-go builds from it: a token bucket at QPS only
			// when on.
			lim := limiterOf(t, rc)
			if (lim != nil) != c.limiterOn || lim != nil && lim.QPS() != c.qps {
				t.Errorf("want client-side limiter on=%v at %v/s, got %v", c.limiterOn, c.qps, lim)
			}
		})
	}
}

// limiterOf is the rate limiter client-go gives a client built from rc.
func limiterOf(t *testing.T, rc *rest.Config) flowcontrol.RateLimiter {
	t.Helper()
	return coreClient(t, rc).GetRateLimiter()
}

// coreClient is a client of the core API built from rc.
func coreClient(t *testing.T, rc *rest.Config) *rest.RESTClient {
	t.Helper()
	cfg := rest.CopyConfig(rc)
	cfg.GroupVersion = &schema.GroupVersion{Version: "v1"}
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	cl, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestUnsetIsClientGoDefault shows why the flags exist: a kubeconfig
// loaded without them gets client-go's 5 requests per second.
func TestUnsetIsClientGoDefault(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if lim := limiterOf(t, rc); lim == nil || lim.QPS() != 5 {
		t.Fatalf("want client-go's default limiter of 5/s, got %v", lim)
	}
}

// TestCompressionFlag: by default a client built from the configuration
// does not ask the API server for gzip (a cache's list pages are otherwise
// compressed by the API server and decompressed by the replica);
// --kube-api-compression asks for it, whatever the kubeconfig's
// disable-compression says. What the server receives is checked, not the
// field.
func TestCompressionFlag(t *testing.T) {
	var mu sync.Mutex
	asked := ""
	// TLS, as an API server is: for a plain-HTTP server without a dial
	// function or proxy, client-go uses Go's default transport, which
	// asks for gzip whatever the configuration says.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = r.Header.Get("Accept-Encoding")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`)); err != nil {
			t.Error(err)
		}
	}))
	defer srv.Close()
	cases := []struct {
		name       string
		args       []string
		kubeconfig string
		gzip       bool
	}{
		{name: "default: not asked"},
		{name: "flag on", args: []string{"--kube-api-compression"}, gzip: true},
		{name: "flag on over a kubeconfig that disables it", args: []string{"--kube-api-compression=true"}, kubeconfig: "disable-compression: true", gzip: true},
		{name: "flag off over a kubeconfig that would ask", args: []string{"--kube-api-compression=false"}, kubeconfig: "disable-compression: false"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cluster := `{server: "` + srv.URL + `", insecure-skip-tls-verify: true`
			if c.kubeconfig != "" {
				cluster += ", " + c.kubeconfig
			}
			path := filepath.Join(t.TempDir(), "kubeconfig")
			kc := strings.Replace(testKubeconfig, `{server: "https://127.0.0.1:6443"`, cluster, 1)
			if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var comp Compression
			comp.BindFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			rc, err := LoadWith(path, RateLimit{QPS: DefaultQPS}, comp)
			if err != nil {
				t.Fatal(err)
			}
			if err := coreClient(t, rc).Get().AbsPath("/api/v1/namespaces").Do(context.Background()).Error(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			got := asked
			mu.Unlock()
			if strings.Contains(got, "gzip") != c.gzip {
				t.Fatalf("Accept-Encoding %q: want gzip asked for = %v", got, c.gzip)
			}
		})
	}
}
