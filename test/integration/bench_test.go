package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appwebhook "github.com/Yolean/buckety-controller/internal/app/webhook"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/wait"
)

// benchGroup is the API group of the benchmark's throwaway resources.
const benchGroup = "bench.buckety.test"

// BenchmarkAdmissionThroughAPIServer measures a server-side dry-run create of
// a Buckety through the real API server, with buckety-webhook in the path
// (TLS, AdmissionReview, the stamp and the validation, as deployed), and
// reports p50 and p99. Each
// iteration also dry-run creates, in a rotating order so that each sees the
// same load, the same object through three paths without buckety-webhook:
//
//   - bare: a resource with no schema and no webhook (test/scale's floor);
//   - allow-all: the same with a webhook that admits everything at once
//     (served by this process, registered with the deployed webhook's
//     matchConditions, failure policy and timeout), the API server's own
//     cost of calling a webhook;
//   - schema: a copy of the Buckety CRD under another group, no webhook:
//     the API server's own cost of the Buckety's schema and CEL rules.
//
// Their ratios are the webhook's: x-bare is the figure
// docs/performance.md's goal names; x-allow-all and the schema row are the
// parts of it buckety-webhook does not own.
//
// BUCKETY_BENCH_BASELINE_WEBHOOK names another buckety-webhook binary (one
// built at an earlier commit): it runs beside the tree's, judging the
// Bucketies labelled baselineLabel, a fifth path, so that two versions are
// compared in one run. BUCKETY_BENCH_PROFILE_DIR keeps CPU profiles of the
// tree's buckety-webhook and of the API server (started with
// BUCKETY_APISERVER_PROFILING=1) over the first
// BUCKETY_BENCH_PROFILE_SECONDS (20) of the timed loop there.
func BenchmarkAdmissionThroughAPIServer(b *testing.B) {
	needInfra(b)
	ns := namespace(b)
	c := newWarningClient(b)
	ctx := context.Background()
	spec := func(i int) (string, map[string]string, v1.BucketySpec) {
		return fmt.Sprintf("b%d", i), map[string]string{"yolean.se/generation": "003"},
			v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}.v${label['yolean.se/generation']}", Parameters: map[string]string{"partitions": "3"}}
	}
	mk := func(i int, extra map[string]string) *v1.Buckety {
		name, labels, s := spec(i)
		maps.Copy(labels, extra)
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Spec: s}
	}
	pprof := startBenchWebhooks(b)
	gvks := installBenchCRDs(b)
	allowed := allowAllWebhook(b, gvks["allow-all"])
	same := func(gvk schema.GroupVersionKind) func(int) error {
		return func(i int) error {
			name, labels, s := spec(i)
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			u.SetNamespace(ns)
			u.SetName(name)
			u.SetLabels(labels)
			u.Object["spec"] = map[string]any{"backend": s.Backend, "name": s.Name, "parameters": map[string]any{"partitions": "3"}}
			return c.Create(ctx, u, client.DryRunAll)
		}
	}
	paths := []admissionPath{{name: "buckety-webhook", create: func(i int) error { return c.Create(ctx, mk(i, nil), client.DryRunAll) }}}
	if os.Getenv("BUCKETY_BENCH_BASELINE_WEBHOOK") != "" {
		paths = append(paths, admissionPath{name: "baseline", create: func(i int) error {
			return c.Create(ctx, mk(i, map[string]string{baselineLabel: "true"}), client.DryRunAll)
		}})
	}
	selected := []map[string]string{nil}
	if len(paths) > 1 {
		selected = append(selected, map[string]string{baselineLabel: "true"})
	}
	paths = append(paths, admissionPath{name: "bare", create: same(gvks["bare"])},
		admissionPath{name: "allow-all", create: same(gvks["allow-all"])},
		admissionPath{name: "schema", create: same(gvks["schema"])})
	for _, extra := range selected {
		wait.For(b, waitTimeout, "webhook in effect", func() (bool, string) {
			bad := mk(0, extra)
			bad.Spec.Backend = "nope"
			err := c.Create(ctx, bad, client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), "no such backend"), fmt.Sprint(err)
		})
	}
	// Warm up each path (discovery, connections), untimed.
	for i := range 20 {
		for _, p := range paths {
			if err := p.create(i); err != nil {
				b.Fatalf("%s warm-up: %v", p.name, err)
			}
		}
	}
	before := allowed.Load()
	profiled := startProfiles(b, pprof)
	i := 0
	for b.Loop() {
		for k := range paths {
			p := &paths[(k+i)%len(paths)]
			start := time.Now()
			if err := p.create(i); err != nil {
				b.Fatalf("%s: %v", p.name, err)
			}
			p.lat = append(p.lat, time.Since(start))
		}
		i++
	}
	profiled()
	if got := allowed.Load() - before; got != int64(i) {
		b.Fatalf("allow-all webhook: want %d admission requests, got %d", i, got)
	}
	reportPaths(b, paths)
}

// baselineLabel marks the Bucketies that the baseline buckety-webhook
// judges in BenchmarkAdmissionThroughAPIServer; the tree's judges the others.
const baselineLabel = "bench.buckety.test/baseline"

// startBenchWebhooks runs the tree's buckety-webhook, with a pprof address
// it returns, for the Bucketies without baselineLabel, and the one
// BUCKETY_BENCH_BASELINE_WEBHOOK names, if set, for those with it; each is
// registered as the deployed Buckety webhook is, with that object
// selector.
func startBenchWebhooks(b *testing.B) string {
	b.Helper()
	ports, err := proc.FreePorts(1)
	if err != nil {
		b.Fatal(err)
	}
	pprof := "127.0.0.1:" + strconv.Itoa(ports[0])
	bin := filepath.Join(b.TempDir(), "buckety-webhook")
	if err := harness.Build(harness.WebhookPackage, bin, ""); err != nil {
		b.Fatal(err)
	}
	type run struct {
		bin  string
		args []string
		op   metav1.LabelSelectorOperator
	}
	runs := []run{{bin, []string{"--pprof-bind-address", pprof}, metav1.LabelSelectorOpDoesNotExist}}
	if base := os.Getenv("BUCKETY_BENCH_BASELINE_WEBHOOK"); base != "" {
		runs = append(runs, run{base, nil, metav1.LabelSelectorOpExists})
	}
	bucketies := v1.GroupVersion.WithResource("bucketies")
	for k, r := range runs {
		hw, err := harness.StartWebhook(b.TempDir(), r.bin, cp.Kubeconfig, webhookConfigYAML(), r.args...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := hw.P.Stop(15 * time.Second); err != nil {
				b.Error(err)
			}
		})
		sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: baselineLabel, Operator: r.op}}}
		registerBenchHook(b, fmt.Sprintf("buckety-bench-%d", k), "https://"+hw.Addr+appwebhook.PathBuckety, hw.CA.CertPEM, bucketies, sel)
		registerBenchStamp(b, fmt.Sprintf("buckety-bench-%d", k), "https://"+hw.Addr+appwebhook.PathAdmitBuckety, hw.CA.CertPEM, sel)
	}
	return pprof
}

// registerBenchHook registers, for the resource gvr, a webhook at url with
// the deployed Buckety webhook's settings (matchConditions, failure
// policy, timeout) and the object selector sel (nil: every object). It is
// deleted when b ends.
func registerBenchHook(b *testing.B, name, url string, caPEM []byte, gvr schema.GroupVersionResource, sel *metav1.LabelSelector) {
	b.Helper()
	hooks, err := harness.DeployedWebhooks()
	if err != nil {
		b.Fatal(err)
	}
	h := hooks[0]
	if len(h.Rules) != 1 || !slices.Equal(h.Rules[0].Resources, []string{"bucketies"}) {
		b.Fatalf("want the first deployed webhook to be the Buckety one with one rule, got %s %+v", h.Name, h.Rules)
	}
	h.Name = name + "." + benchGroup
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
	h.Rules[0].APIGroups, h.Rules[0].APIVersions, h.Rules[0].Resources = []string{gvr.Group}, []string{gvr.Version}, []string{gvr.Resource}
	h.ObjectSelector = sel
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.ValidatingWebhook{h}}
	if err := k8s.Create(context.Background(), vwc); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := k8s.Delete(context.Background(), vwc); err != nil {
			b.Error(err)
		}
	})
}

// registerBenchStamp registers the deployed Buckety stamp (the mutating
// webhook that adds the finalizer and slot label) at url with the object
// selector sel, so that the buckety-webhook path is the deployed one: a
// stamp and a validation per create. It is deleted when b ends.
func registerBenchStamp(b *testing.B, name, url string, caPEM []byte, sel *metav1.LabelSelector) {
	b.Helper()
	stamps, err := harness.DeployedStamps()
	if err != nil {
		b.Fatal(err)
	}
	h := stamps[0]
	if len(h.Rules) != 1 || !slices.Equal(h.Rules[0].Resources, []string{"bucketies"}) {
		b.Fatalf("want the first deployed stamp to be the Buckety one with one rule, got %s %+v", h.Name, h.Rules)
	}
	h.Name = name + ".stamp." + benchGroup
	h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM}
	h.ObjectSelector = sel
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: []admissionregistrationv1.MutatingWebhook{h}}
	if err := k8s.Create(context.Background(), mwc); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := k8s.Delete(context.Background(), mwc); err != nil {
			b.Error(err)
		}
	})
}

// admissionPath is one way a dry-run create goes through the API server,
// and its latencies.
type admissionPath struct {
	name   string
	create func(i int) error
	lat    []time.Duration
}

// reportPaths reports the first path's p50 and p99 (p50-µs, p99-µs), every
// other's, and the first's p99 and p50 as a ratio to each other's.
func reportPaths(b *testing.B, paths []admissionPath) {
	p50, p99 := make([]float64, len(paths)), make([]float64, len(paths))
	for k := range paths {
		lat := paths[k].lat
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p50[k], p99[k] = float64(lat[len(lat)/2].Microseconds()), float64(lat[len(lat)*99/100].Microseconds())
	}
	b.ReportMetric(p50[0], "p50-µs")
	b.ReportMetric(p99[0], "p99-µs")
	line := fmt.Sprintf("%s p50 %.0f µs p99 %.0f µs", paths[0].name, p50[0], p99[0])
	for k := 1; k < len(paths); k++ {
		n := paths[k].name
		b.ReportMetric(p50[k], n+"-p50-µs")
		b.ReportMetric(p99[k], n+"-p99-µs")
		b.ReportMetric(p99[0]/p99[k], "p99-x-"+n)
		b.ReportMetric(p50[0]/p50[k], "p50-x-"+n)
		line += fmt.Sprintf("; %s p50 %.0f µs p99 %.0f µs (%s p99 %.2f×, p50 %.2f×)", n, p50[k], p99[k], paths[0].name, p99[0]/p99[k], p50[0]/p50[k])
	}
	b.Log(line)
}

// installBenchCRDs creates the benchmark's resources: "bare" and
// "allow-all", two CRDs with no schema, and "schema", the Buckety CRD
// under benchGroup. It returns their kinds by name; they are deleted when
// b ends.
func installBenchCRDs(b *testing.B) map[string]schema.GroupVersionKind {
	b.Helper()
	ctx := context.Background()
	ext, err := client.New(cp.RESTConfig, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(ext.Scheme()); err != nil {
		b.Fatal(err)
	}
	crds, err := controlplane.ReadCRDs(controlplane.CRDDir())
	if err != nil {
		b.Fatal(err)
	}
	var bucketyCRD *apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds {
		if crd.Spec.Names.Kind == "Buckety" {
			bucketyCRD = crd
		}
	}
	if bucketyCRD == nil {
		b.Fatalf("no Buckety CRD in %s", controlplane.CRDDir())
	}
	preserve := true
	untyped := func(plural, kind string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + benchGroup},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: benchGroup, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
				}},
			},
		}
	}
	copied := bucketyCRD.DeepCopy()
	copied.ObjectMeta = metav1.ObjectMeta{Name: copied.Spec.Names.Plural + "." + benchGroup}
	copied.Spec.Group = benchGroup
	copied.Spec.Names.Categories = nil
	copied.Spec.Names.ShortNames = nil
	out := map[string]schema.GroupVersionKind{}
	for name, crd := range map[string]*apiextensionsv1.CustomResourceDefinition{"bare": untyped("widgets", "Widget"), "allow-all": untyped("gadgets", "Gadget"), "schema": copied} {
		if err := ext.Create(ctx, crd); err != nil {
			b.Fatalf("create CRD %s: %v", crd.Name, err)
		}
		b.Cleanup(func() {
			if err := ext.Delete(context.Background(), crd); err != nil {
				b.Error(err)
			}
		})
		out[name] = schema.GroupVersionKind{Group: benchGroup, Version: crd.Spec.Versions[0].Name, Kind: crd.Spec.Names.Kind}
	}
	for name, gvk := range out {
		wait.For(b, waitTimeout, name+" resource served", func() (bool, string) {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			err := k8s.List(ctx, l)
			return err == nil, fmt.Sprint(err)
		})
	}
	return out
}

// allowAllWebhook serves, from this process, a webhook that admits every
// request at once, with TLS and HTTP/2 as buckety-webhook serves them,
// and registers it for gvk's resource with the deployed Buckety webhook's
// settings. It returns the count of requests it answered.
func allowAllWebhook(b *testing.B, gvk schema.GroupVersionKind) *atomic.Int64 {
	b.Helper()
	ca, err := pki.NewCA("allow-all-ca")
	if err != nil {
		b.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue("allow-all", nil, nil, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if _, err := fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.Request.UID); err != nil {
			b.Error(err)
		}
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	tl := tls.NewListener(l, &tls.Config{NextProtos: []string{"h2", "http/1.1"}, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(tl) }()
	b.Cleanup(func() {
		if err := srv.Close(); err != nil {
			b.Error(err)
		}
		if err := <-served; err != http.ErrServerClosed {
			b.Error(err)
		}
	})
	gvr := gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind) + "s")
	registerBenchHook(b, "allow-all-bench", "https://"+l.Addr().String()+"/allow", ca.CertPEM, gvr, nil)
	wait.For(b, waitTimeout, "allow-all webhook in effect", func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetGenerateName("probe-")
		u.SetNamespace("default")
		err := k8s.Create(context.Background(), u, client.DryRunAll)
		return err == nil && n.Load() > 0, fmt.Sprintf("%d requests, create: %v", n.Load(), err)
	})
	return &n
}

// startProfiles, with BUCKETY_BENCH_PROFILE_DIR set, starts CPU profiles of
// buckety-webhook (its pprof address) and of the API server; the function
// it returns waits for them and writes them there.
func startProfiles(b *testing.B, webhookPprof string) func() {
	dir := os.Getenv("BUCKETY_BENCH_PROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	secs := 20
	if s := os.Getenv("BUCKETY_BENCH_PROFILE_SECONDS"); s != "" {
		var err error
		if secs, err = strconv.Atoi(s); err != nil {
			b.Fatalf("BUCKETY_BENCH_PROFILE_SECONDS: %v", err)
		}
	}
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		b.Fatal(err)
	}
	q := "seconds=" + strconv.Itoa(secs)
	fetch := map[string]func() ([]byte, error){
		"webhook": func() ([]byte, error) {
			resp, err := http.Get("http://" + webhookPprof + "/debug/pprof/profile?" + q)
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("webhook pprof: %s", resp.Status)
			}
			return io.ReadAll(resp.Body)
		},
		"apiserver": func() ([]byte, error) {
			return cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(secs)).Timeout(time.Duration(secs+30) * time.Second).DoRaw(context.Background())
		},
	}
	errs := make(chan error, len(fetch))
	for name, f := range fetch {
		go func() {
			raw, err := f()
			if err == nil {
				path := filepath.Join(dir, "bench-admission-"+name+".pb.gz")
				err = os.WriteFile(path, raw, 0o644)
				b.Logf("%s CPU profile over %d s: %s", name, secs, path)
			}
			errs <- err
		}()
	}
	return func() {
		for range fetch {
			if err := <-errs; err != nil {
				b.Error(err)
			}
		}
	}
}
