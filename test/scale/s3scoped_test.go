package scale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/proc"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// The backends the scoped S3 figures compare, two per server, each reached
// through a counting proxy of its own: on MinIO, s3-shared hands every
// access the root keys and s3-scoped a key of its own (a user per access);
// on SeaweedFS, s3w-shared the admin identity's keys and s3w-iam an IAM
// user per access, made through the IAM API on the S3 port; on VersityGW,
// s3v-shared the root keys and s3v-scoped a gateway user per access,
// named in its bucket's policy (its admin API, on a port of its own, has a
// counting proxy of its own too).
const (
	sharedS3Backend      = "s3-shared"
	scopedS3Backend      = "s3-scoped"
	sharedWeedBackend    = "s3w-shared"
	iamWeedBackend       = "s3w-iam"
	sharedVersityBackend = "s3v-shared"
	scopedVersityBackend = "s3v-scoped"
)

// scopedS3Server is one server of the scoped S3 figures: its label and
// what its keys are, its two backends and their proxies (adminProxy, when
// set, is the scoped backend's proxy to an admin API on a port of its
// own), and the API that makes and deletes keys, as its rows name it (api)
// and the proxies count it (keyPrefix: "admin " on MinIO and VersityGW,
// "iam " on SeaweedFS).
type scopedS3Server struct {
	label, keys                          string
	srv                                  *s3test.Server
	shared, scoped                       string
	sharedProxy, scopedProxy, adminProxy *countingProxy
	api, keyPrefix                       string
}

// versityScoped is VersityGW's: a gateway user per access through its
// admin API, granted in the bucket's policy through S3.
func (e *env) versityScoped() scopedS3Server {
	return scopedS3Server{label: "s3 (VersityGW)", keys: "scoped", srv: e.versity, shared: sharedVersityBackend, scoped: scopedVersityBackend,
		sharedProxy: e.sharedVersity, scopedProxy: e.scopedVersity, adminProxy: e.versityAdmin, api: "admin", keyPrefix: "admin "}
}

// scopedCounts is what the scoped backend sent, through both its proxies.
func (sv scopedS3Server) scopedCounts() counts {
	c := sv.scopedProxy.snapshot()
	if sv.adminProxy != nil {
		maps.Copy(c, sv.adminProxy.snapshot())
	}
	return c
}

// scopedLatency is the answer time of what the scoped backend sent, in
// microseconds per kind, through both its proxies.
func (sv scopedS3Server) scopedLatency() counts {
	c := sv.scopedProxy.latency()
	if sv.adminProxy != nil {
		maps.Copy(c, sv.adminProxy.latency())
	}
	return c
}

// cpu is the CPU seconds the controller, the server and the control
// plane (etcd and kube-apiserver) have used.
func (e *env) cpu(sv scopedS3Server) (ctrl, server, cp float64) {
	e.t.Helper()
	ctrl, err := harness.CPUSeconds(e.ctrl.P.PID())
	if err != nil {
		e.t.Fatal(err)
	}
	if server, err = harness.CPUSeconds(sv.srv.PID()); err != nil {
		e.t.Fatal(err)
	}
	return ctrl, server, e.controlPlaneCPU()
}

// controlPlaneCPU is the CPU seconds of this environment's etcd and
// kube-apiserver: the processes of those names whose command line names
// the control plane's directory (other environments on the machine have
// their own).
func (e *env) controlPlaneCPU() float64 {
	e.t.Helper()
	pids, err := proc.Matching(func(args []string) bool {
		name := filepath.Base(args[0])
		return (name == "etcd" || name == "kube-apiserver") && strings.Contains(strings.Join(args, " "), e.cp.Dir)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	total := 0.0
	for _, pid := range pids {
		if s, err := harness.CPUSeconds(pid); err == nil { // gone meanwhile: nothing more to count
			total += s
		}
	}
	return total
}

// minioScoped is MinIO's: a user per access through its admin API.
func (e *env) minioScoped() scopedS3Server {
	return scopedS3Server{label: "s3 (MinIO)", keys: "scoped", srv: e.s3, shared: sharedS3Backend, scoped: scopedS3Backend,
		sharedProxy: e.sharedS3, scopedProxy: e.scopedS3, api: "admin", keyPrefix: "admin "}
}

// weedScoped is SeaweedFS's: an IAM user per access through its IAM API.
func (e *env) weedScoped() scopedS3Server {
	return scopedS3Server{label: "s3 (SeaweedFS)", keys: "IAM user per access", srv: e.weed, shared: sharedWeedBackend, scoped: iamWeedBackend,
		sharedProxy: e.sharedWeed, scopedProxy: e.iamWeed, api: "IAM", keyPrefix: "iam "}
}

// countingProxy is a loopback reverse proxy in front of an S3 server that
// counts what one backend sends: MinIO's admin API requests by operation,
// IAM API requests (SeaweedFS serves them on its S3 port) by action, S3
// requests by method. Neither server's own metrics count those. The
// client's Host header is passed on unchanged, as SigV4 signed it.
type countingProxy struct {
	URL string
	srv *http.Server
	// admin marks a proxy in front of an admin API that has a port of its
	// own (VersityGW's): every request counts as "admin <route>".
	admin bool
	mu    sync.Mutex
	n     counts
	// us is the time the server took to answer, in microseconds, summed
	// per kind as n counts them: how long a request waited on the server,
	// its locks included.
	us counts
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	return startProxy(t, target, false)
}

// startAdminProxy counts every request as one to an admin API.
func startAdminProxy(t *testing.T, target string) *countingProxy {
	return startProxy(t, target, true)
}

func startProxy(t *testing.T, target string, admin bool) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{URL: "http://" + ln.Addr().String(), admin: admin, n: counts{}, us: counts{}}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}}
	p.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, err := requestKind(r)
		if p.admin {
			kind, err = "admin "+strings.TrimPrefix(r.URL.Path, "/"), nil
		}
		if err != nil {
			http.Error(w, "counting proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
		start := time.Now()
		rp.ServeHTTP(w, r)
		p.mu.Lock()
		p.n[kind]++
		p.us[kind] += time.Since(start).Microseconds()
		p.mu.Unlock()
	})}
	go func() {
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("counting proxy for %s: %v", target, err)
		}
	}()
	t.Cleanup(func() {
		if err := p.srv.Close(); err != nil {
			t.Errorf("close counting proxy: %v", err)
		}
	})
	return p
}

// requestKind is "admin <operation>" for MinIO's admin API, "iam <Action>"
// for an IAM API request (a form POST to / with Action), else
// "S3 <method>". An IAM request's body is read and put back as it was,
// for the server checks the signature of its hash.
func requestKind(r *http.Request) (string, error) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/minio/admin/"); ok {
		parts := strings.Split(rest, "/") // v3/add-service-account
		return "admin " + parts[len(parts)-1], nil
	}
	if r.Method == http.MethodPost && r.URL.Path == "/" && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return "", fmt.Errorf("read an IAM request: %w", err)
		}
		if err := r.Body.Close(); err != nil {
			return "", err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return "", fmt.Errorf("parse an IAM request: %w", err)
		}
		if a := form.Get("Action"); a != "" {
			return "iam " + a, nil
		}
	}
	return "S3 " + r.Method, nil
}

func (p *countingProxy) snapshot() counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.n)
}

// latency is the answer time the proxy has seen, in microseconds per kind.
func (p *countingProxy) latency() counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.us)
}

// s3 is a count's S3 requests (with counts the rest by prefix).
func (c counts) s3() counts { return c.with("S3 ") }
func (c counts) with(prefix string) counts {
	out := counts{}
	for k, v := range c {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// scopedS3Figures provisions m Bucketies with their defaultAccess on one
// server (MinIO or SeaweedFS) twice, with shared root keys and with a key
// of its own per access, and reports the time until all are Ready and the
// requests per access of each; then it deletes the scoped ones and counts
// what revocation costs and that no key is left. The shared ones are
// deleted too, so the cold start that follows re-verifies what it did
// before. It returns the time to all Ready with shared keys.
func scopedS3Figures(t *testing.T, e *env, tb *table, sv scopedS3Server, m int) time.Duration {
	t.Helper()
	ctx := context.Background()
	timeout := 5*time.Minute + time.Duration(m)*700*time.Millisecond
	// Buckets are named after the Buckety (the default template), and the
	// two backends are one server: each run has names of its own, so each
	// creates its buckets.
	// phase is what one backend's provisioning cost: the requests it sent
	// and their answer times, and the CPU seconds of the controller and
	// the server (through the quiet period provision ends with).
	type phase struct {
		reqs, us               counts
		ctrlCPU, srvCPU, cpCPU float64
	}
	run := func(backend string, reqs, lat func() counts, prefix string) (string, []string, provisioned, phase) {
		ns := fmt.Sprintf("scale-%s-%d", backend, m)
		if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		names := make([]string, m)
		for i := range names {
			names[i] = fmt.Sprintf("%s%d-%05d", prefix, m, i)
		}
		before, beforeUs := reqs(), lat()
		c0, s0, p0 := e.cpu(sv)
		prov := provision(t, e, ns, names, backend, func(string) map[string]string { return nil }, timeout)
		c1, s1, p1 := e.cpu(sv)
		return ns, names, prov, phase{reqs: reqs().minus(before), us: lat().minus(beforeUs), ctrlCPU: c1 - c0, srvCPU: s1 - s0, cpCPU: p1 - p0}
	}
	sharedNs, _, shared, sharedPh := run(sv.shared, sv.sharedProxy.snapshot, sv.sharedProxy.latency, "u")
	scopedNs, names, scoped, scopedPh := run(sv.scoped, sv.scopedCounts, sv.scopedLatency, "k")
	sharedReqs, scopedReqs := sharedPh.reqs, scopedPh.reqs
	e.checkScopedS3Secrets(ctx, sv, scopedNs, names, scoped.topics)

	per := func(c counts) string { return fmt.Sprintf("%.3f = %s", float64(c.total())/float64(m), c) }
	api := sv.api
	name := sv.label + " " + sv.keys
	tb.add(sv.label+" shared root keys: all Ready with their Secrets (total)", m, secs(shared.total), "", nil, "")
	tb.add(name+": all Ready with their Secrets and own keys (total)", m, secs(scoped.total), "", nil,
		fmt.Sprintf("%.2f× shared", scoped.total.Seconds()/shared.total.Seconds()))
	tb.add(fmt.Sprintf("%s: %s requests per access", name, api), m, per(scopedReqs.with(sv.keyPrefix)), "", nil, "")
	tb.add(fmt.Sprintf("%s: %s answer time per access (mean per request)", name, api), m, answerTimes(scopedReqs.with(sv.keyPrefix), scopedPh.us.with(sv.keyPrefix), m), "", nil, "")
	cpuPer := func(ph phase) string {
		return fmt.Sprintf("controller %.1f ms, server %.1f ms, etcd and API server %.1f ms", 1000*ph.ctrlCPU/float64(m), 1000*ph.srvCPU/float64(m), 1000*ph.cpCPU/float64(m))
	}
	tb.add(name+": CPU per access to provision and settle (shared: "+cpuPer(sharedPh)+")", m, cpuPer(scopedPh), "", nil, "")
	tb.add(name+": S3 requests per access (shared: "+per(sharedReqs.s3())+")", m, per(scopedReqs.s3()), "", nil, "")
	tb.add(name+": S3 answer time per access (mean per request; shared: "+answerTimes(sharedReqs.s3(), sharedPh.us.s3(), m)+")", m, answerTimes(scopedReqs.s3(), scopedPh.us.s3(), m), "", nil, "")
	tb.add(name+": controller API writes to provision, per Buckety (with access, Secret, claim, credential, events)", m,
		fmt.Sprintf("%.2f = %s", float64(scoped.writes.total())/float64(m), scoped.writes), "", nil, "")
	sharedGone := false
	if sv.srv.Implementation == "minio" && m >= 100 {
		// Issue 54: the sweep's memory with m keys (only at bench sizes:
		// it waits up to two sweep intervals), in the goal's setting: the
		// per-access keys alone, so the shared Bucketies (deleted below
		// in any case) go first and the controller settles.
		deleteAllIn(t, e, sharedNs, 5*time.Minute+time.Duration(m)*200*time.Millisecond)
		sharedGone = true
		e.quiet(15 * time.Second)
		sm := e.credentialSweepMemory(sv, 3*time.Minute+time.Duration(m)*100*time.Millisecond)
		tb.add(name+": controller peak RSS across a credential sweep, the per-access Bucketies alone (VmHWM reset before it)", m, fmt.Sprintf("%.1f MiB (%.1f MiB before it)", float64(sm.peak)/(1<<20), float64(sm.before)/(1<<20)),
			"≤ 96 MiB", ptr(sm.peak <= sweepPeakRSSGoal), "")
		tb.add(name+": credential sweep: duration / admin requests (with anything else sent meanwhile)", m,
			fmt.Sprintf("%s / %s", secs(sm.duration), sm.reqs.with(sv.keyPrefix)), "", nil, "")
	}

	// Deletion revokes every key before the finalizers go.
	before := sv.scopedCounts()
	gone := deleteAllIn(t, e, scopedNs, 5*time.Minute+time.Duration(m)*200*time.Millisecond)
	e.quiet(15 * time.Second)
	revoke := sv.scopedCounts().minus(before)
	tb.add(name+": all deleted, keys revoked", m, secs(gone), "", nil, "")
	tb.add(fmt.Sprintf("%s: %s requests to revoke, per access", name, api), m, per(revoke.with(sv.keyPrefix)), "", nil, "")
	keys, err := harness.IssuedS3Keys(ctx, sv.srv)
	if err != nil {
		t.Fatal(err)
	}
	var cl v1.BucketyCredentialList
	if err := e.k8s.List(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	records := 0
	for _, c := range cl.Items {
		if c.Spec.Backend == sv.scoped {
			records++
		}
	}
	tb.add(name+": minted keys / BucketyCredentials left after deletion", m, fmt.Sprintf("%d / %d", len(keys), records), "0 / 0", ptr(len(keys) == 0 && records == 0), "")
	if len(keys) != 0 || records != 0 {
		t.Errorf("after deleting every scoped s3 Buckety on %s: %d minted keys and %d BucketyCredentials of %s left", sv.srv.Implementation, len(keys), records, sv.scoped)
	}
	if !sharedGone {
		deleteAllIn(t, e, sharedNs, 5*time.Minute+time.Duration(m)*200*time.Millisecond)
	}
	return shared.total
}

// answerTimes is the time the server took to answer requests n, in all
// per access and as the mean of each kind: "31.2 ms (add-user 12.0 ms, …)",
// from us, their summed answer times in microseconds.
func answerTimes(n, us counts, accesses int) string {
	keys := slices.Sorted(maps.Keys(n))
	sort.SliceStable(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.1f ms", k, float64(us[k])/1000/float64(n[k])))
	}
	return fmt.Sprintf("%.1f ms (%s)", float64(us.total())/1000/float64(accesses), strings.Join(parts, ", "))
}

// checkScopedS3Secrets asserts that every Secret holds a key of its own,
// minted on the server (on SeaweedFS: a key of the IAM user the access's
// status names), and that a sample of them write and read their own
// bucket and are refused a neighbour's bucket and creating one (the
// harness's requests come after the counts were read).
func (e *env) checkScopedS3Secrets(ctx context.Context, sv scopedS3Server, ns string, names, buckets []string) {
	e.t.Helper()
	_, owners, err := harness.S3KeyOwners(ctx, sv.srv)
	if err != nil {
		e.t.Fatal(err)
	}
	keys := map[string]string{}
	for i, name := range names {
		var s corev1.Secret
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-creds"}, &s); err != nil {
			e.t.Fatal(err)
		}
		var a v1.BucketyAccess
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &a); err != nil {
			e.t.Fatal(err)
		}
		k := string(s.Data["accessKeyID"])
		if owner, minted := owners[k]; k == "" || k == sv.srv.AccessKey || keys[k] != "" || !minted || owner != a.Status.Principal {
			e.t.Fatalf("Secret %s: want a minted key of its own, of its access's principal %q, got %q (root %t, minted for %q, also in %q's)",
				s.Name, a.Status.Principal, k, k == sv.srv.AccessKey, owner, keys[k])
		}
		keys[k] = name
		if i%max(1, len(names)/5) != 0 {
			continue
		}
		c := s3.New(s3.Options{Region: string(s.Data["region"]), BaseEndpoint: aws.String(string(s.Data["endpoint"])), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(k, string(s.Data["secretAccessKey"]), "")})
		own, neighbour := buckets[i], buckets[(i+1)%len(buckets)]
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(own), Key: aws.String("probe"), Body: strings.NewReader("v")}); err != nil {
			e.t.Errorf("Secret %s: put into its own bucket %s: %v", s.Name, own, err)
		}
		if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(own), Key: aws.String("probe")}); err != nil {
			e.t.Errorf("Secret %s: get from its own bucket %s: %v", s.Name, own, err)
		}
		if own != neighbour {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(neighbour), Key: aws.String("probe"), Body: strings.NewReader("v")})
			if !accessDenied(err) {
				e.t.Errorf("Secret %s: put into the neighbour's bucket %s: want AccessDenied, got %v", s.Name, neighbour, err)
			}
		}
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(own + "-x")})
		if !accessDenied(err) {
			e.t.Errorf("Secret %s: create bucket %s-x: want AccessDenied, got %v", s.Name, own, err)
		}
	}
}

func accessDenied(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "AccessDenied"
}

// deleteAllIn deletes every Buckety in ns and waits until they and their
// accesses are gone; it returns how long that took.
func deleteAllIn(t *testing.T, e *env, ns string, timeout time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	deleteCollection(t, e.k8s, ns, &v1.Buckety{}, &v1.BucketyList{})
	for {
		var bl v1.BucketyList
		if err := e.k8s.List(ctx, &bl, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		var al v1.BucketyAccessList
		if err := e.k8s.List(ctx, &al, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(bl.Items) == 0 && len(al.Items) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%d Bucketies and %d accesses left in %s %s after deleting them\ncontroller log:\n%s", len(bl.Items), len(al.Items), ns, time.Since(start).Round(time.Second), e.ctrl.P.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
