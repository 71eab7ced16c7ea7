package scale

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
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
)

// The two MinIO backends the scoped S3 figures compare, each reached
// through a counting proxy of its own: s3-shared hands every access the
// root keys, s3-scoped a service account per access.
const (
	sharedS3Backend = "s3-shared"
	scopedS3Backend = "s3-scoped"
)

// countingProxy is a loopback reverse proxy in front of MinIO that counts
// what one backend sends: admin API requests by operation, S3 requests by
// method. MinIO's own metrics count no admin requests. The client's Host
// header is passed on unchanged, as SigV4 signed it.
type countingProxy struct {
	URL string
	srv *http.Server
	mu  sync.Mutex
	n   counts
}

func startCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{URL: "http://" + ln.Addr().String(), n: counts{}}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}}
	p.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.n[requestKind(r)]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
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

// requestKind is "admin <operation>" for MinIO's admin API, else "S3 <method>".
func requestKind(r *http.Request) string {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/minio/admin/"); ok {
		parts := strings.Split(rest, "/") // v3/add-service-account
		return "admin " + parts[len(parts)-1]
	}
	return "S3 " + r.Method
}

func (p *countingProxy) snapshot() counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := counts{}
	for k, v := range p.n {
		out[k] = v
	}
	return out
}

// admin and s3 split a count into its admin and S3 requests.
func (c counts) admin() counts { return c.with("admin ") }
func (c counts) s3() counts    { return c.with("S3 ") }
func (c counts) with(prefix string) counts {
	out := counts{}
	for k, v := range c {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}

// scopedS3Figures provisions m Bucketies with their defaultAccess on MinIO
// twice, with shared root keys and with a service account per access, and
// reports the time until all are Ready and the requests per access of
// each; then it deletes the scoped ones and counts what revocation costs
// and that no key is left. The shared ones are deleted too, so the cold
// start that follows re-verifies what it did before.
func scopedS3Figures(t *testing.T, e *env, tb *table, m int) {
	t.Helper()
	ctx := context.Background()
	timeout := 5*time.Minute + time.Duration(m)*700*time.Millisecond
	// Buckets are named after the Buckety (the default template), and the
	// two backends are one server: each run has names of its own, so each
	// creates its buckets.
	run := func(backend string, p *countingProxy, prefix string) (string, []string, provisioned, counts) {
		ns := fmt.Sprintf("scale-%s-%d", backend, m)
		if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		names := make([]string, m)
		for i := range names {
			names[i] = fmt.Sprintf("%s%d-%05d", prefix, m, i)
		}
		before := p.snapshot()
		prov := provision(t, e, ns, names, backend, func(string) map[string]string { return nil }, timeout)
		return ns, names, prov, p.snapshot().minus(before)
	}
	sharedNs, _, shared, sharedReqs := run(sharedS3Backend, e.sharedS3, "u")
	scopedNs, names, scoped, scopedReqs := run(scopedS3Backend, e.scopedS3, "k")
	e.checkScopedS3Secrets(ctx, scopedNs, names, scoped.topics)

	per := func(c counts) string { return fmt.Sprintf("%.3f = %s", float64(c.total())/float64(m), c) }
	tb.add("s3 (MinIO) shared root keys: all Ready with their Secrets (total)", m, secs(shared.total), "", nil, "")
	tb.add("s3 (MinIO) scoped: all Ready with their Secrets and own keys (total)", m, secs(scoped.total), "", nil,
		fmt.Sprintf("%.2f× shared", scoped.total.Seconds()/shared.total.Seconds()))
	tb.add("s3 (MinIO) scoped: admin requests per access", m, per(scopedReqs.admin()), "", nil, "")
	tb.add("s3 (MinIO) scoped: S3 requests per access (shared: "+per(sharedReqs.s3())+")", m, per(scopedReqs.s3()), "", nil, "")
	tb.add("s3 (MinIO) scoped: controller API writes to provision, per Buckety (with access, Secret, claim, credential, events)", m,
		fmt.Sprintf("%.2f = %s", float64(scoped.writes.total())/float64(m), scoped.writes), "", nil, "")

	// Deletion revokes every key before the finalizers go.
	before := e.scopedS3.snapshot()
	gone := deleteAllIn(t, e, scopedNs, 5*time.Minute+time.Duration(m)*200*time.Millisecond)
	e.quiet(15 * time.Second)
	revoke := e.scopedS3.snapshot().minus(before)
	tb.add("s3 (MinIO) scoped: all deleted, keys revoked", m, secs(gone), "", nil, "")
	tb.add("s3 (MinIO) scoped: admin requests to revoke, per access", m, per(revoke.admin()), "", nil, "")
	keys, err := harness.MintedS3Keys(ctx, e.s3)
	if err != nil {
		t.Fatal(err)
	}
	var cl v1.BucketyCredentialList
	if err := e.k8s.List(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	records := 0
	for _, c := range cl.Items {
		if c.Spec.Backend == scopedS3Backend {
			records++
		}
	}
	tb.add("s3 (MinIO) scoped: minted keys / BucketyCredentials left after deletion", m, fmt.Sprintf("%d / %d", len(keys), records), "0 / 0", ptr(len(keys) == 0 && records == 0), "")
	if len(keys) != 0 || records != 0 {
		t.Errorf("after deleting every scoped s3 Buckety: %d minted keys and %d BucketyCredentials of %s left", len(keys), records, scopedS3Backend)
	}
	deleteAllIn(t, e, sharedNs, 5*time.Minute+time.Duration(m)*200*time.Millisecond)
}

// checkScopedS3Secrets asserts that every Secret holds a key of its own,
// minted on MinIO, and that a sample of them write and read their own
// bucket and are refused a neighbour's bucket and creating one (the
// harness's requests come after the counts were read).
func (e *env) checkScopedS3Secrets(ctx context.Context, ns string, names, buckets []string) {
	e.t.Helper()
	minted, err := harness.MintedS3Keys(ctx, e.s3)
	if err != nil {
		e.t.Fatal(err)
	}
	keys := map[string]string{}
	for i, name := range names {
		var s corev1.Secret
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-creds"}, &s); err != nil {
			e.t.Fatal(err)
		}
		k := string(s.Data["accessKeyID"])
		if k == "" || k == e.s3.AccessKey || keys[k] != "" || !minted[k] {
			e.t.Fatalf("Secret %s: want a minted key of its own, got %q (root %t, minted %t, also in %q's)", s.Name, k, k == e.s3.AccessKey, minted[k], keys[k])
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
	if err := e.k8s.DeleteAllOf(ctx, &v1.Buckety{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
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
