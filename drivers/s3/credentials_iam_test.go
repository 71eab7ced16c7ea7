package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
)

// iamFixture opens a backend with credentials on a SeaweedFS, whose IAM
// API is the one users per access are made through.
func iamFixture(t *testing.T) (*seaweedfs.Server, *Backend, *iam.Client) {
	t.Helper()
	srv := seaweedfs.Start(t, seaweedfs.Options{})
	cfg := &Config{Implementation: ImplSeaweedFS, Endpoint: srv.Endpoint, Region: "us-east-1", ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second},
		Credentials: &Credentials{}}
	be, _ := open(t, cfg)
	return srv, be, iam.New(srv.Endpoint, "us-east-1", srv.AccessKey, srv.SecretKey, &http.Client{Timeout: 10 * time.Second})
}

// seaweedAs is an S3 client of srv signing with a Secret's keys.
func seaweedAs(srv *seaweedfs.Server, data map[string][]byte) s3Ops {
	return s3Ops{cl: s3.New(s3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials:                credentials.NewStaticCredentialsProvider(string(data[SecretAccessKeyID]), string(data[SecretSecretAccessKey]), ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})}
}

// TestIAMKeysPerAccess: on SeaweedFS through the IAM API, an access's
// Secret holds a key IAM issued to a user of its own, which does what its
// role allows on its bucket only; a grant read back from the Secret keeps
// the key; a grant whose Secret lost the key (a crash before the write)
// replaces it and leaves the user one key; the sweep sees a deleted key
// and an edited policy; revocation leaves nothing usable; a user buckety
// did not make is refused.
func TestIAMKeysPerAccess(t *testing.T) {
	srv, be, admin := iamFixture(t)
	ctx := context.Background()
	if sc, err := be.Issuing(ctx); err != nil || !sc.PerAccess {
		t.Fatalf("want the backend scoped, got %+v, %v", sc, err)
	}
	rawOps := s3Ops{t: t, cl: rawClient(t, be.cfg, be.cfg.Endpoint)}
	for _, b := range []string{"ledger", "payroll"} {
		if err := rawOps.createBucket(b); err != nil {
			t.Fatal(err)
		}
		if err := rawOps.put(b, "seed"); err != nil {
			t.Fatal(err)
		}
	}
	access := func(name, role string, serial int) drivers.Access {
		a := drivers.Access{Resource: "ledger", Namespace: "team", Name: name, UID: "uid-" + name, Role: drivers.Role(role), Assert: drivers.IssueRecorded}
		a.Principal = be.Principal(a, serial)
		return a
	}
	w := access("writer", "ReadWrite", 1)
	if found, err := be.InspectPrincipal(ctx, w.Principal); err != nil || found {
		t.Fatalf("inspect before the issue: %v %v", found, err)
	}
	g, err := be.Grant(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if g.Principal != w.Principal || string(g.Data[SecretAccessKeyID]) == w.Principal || !g.PerAccess {
		t.Fatalf("want the user %s with a key IAM issued, got %+v", w.Principal, g)
	}
	ops := seaweedAs(srv, g.Data)
	ops.t = t
	for what, err := range map[string]error{"put": ops.put("ledger", "w"), "get": ops.get("ledger", "seed"), "list": ops.list("ledger")} {
		if err != nil {
			t.Errorf("writer %s on its bucket: %v", what, err)
		}
	}
	for what, err := range map[string]error{"put": ops.put("payroll", "w"), "list": ops.list("payroll"), "create": ops.createBucket("mine")} {
		if err == nil {
			t.Errorf("writer %s outside its bucket: want refused", what)
		}
	}
	r := access("reader", "ReadOnly", 1)
	gr, err := be.Grant(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	ro := seaweedAs(srv, gr.Data)
	ro.t = t
	if err := ro.get("ledger", "seed"); err != nil {
		t.Errorf("reader get: %v", err)
	}
	if err := ro.put("ledger", "r"); err == nil {
		t.Error("reader put: want refused")
	}

	// Asserted again from its Secret: the same key, nothing new.
	again := w
	again.Assert = drivers.Reassert
	again.Secret = be.SecretFrom(w.Principal, g.Data)
	g2, err := be.Grant(ctx, again)
	if err != nil || string(g2.Data[SecretAccessKeyID]) != string(g.Data[SecretAccessKeyID]) {
		t.Fatalf("re-assert from the Secret: want key %s kept, got %s (%v)", g.Data[SecretAccessKeyID], g2.Data[SecretAccessKeyID], err)
	}
	// The Secret lost (a crash before its write): a new key, the old one
	// deleted, one key left.
	lost := again
	lost.Secret = ""
	g3, err := be.Grant(ctx, lost)
	if err != nil || string(g3.Data[SecretAccessKeyID]) == string(g.Data[SecretAccessKeyID]) {
		t.Fatalf("grant without the Secret: want a new key, got %s (%v)", g3.Data[SecretAccessKeyID], err)
	}
	if keys, err := admin.ListAccessKeys(ctx, w.Principal); err != nil || len(keys) != 1 {
		t.Fatalf("want one key left, got %v (%v)", keys, err)
	}
	if err := seaweedAs(srv, g.Data).list("ledger"); err == nil {
		t.Error("the replaced key still works")
	}

	// Drift: a deleted key, an edited policy; the others are judged too.
	w3 := again
	w3.Secret = be.SecretFrom(w.Principal, g3.Data)
	if err := admin.DeleteAccessKey(ctx, w.Principal, string(g3.Data[SecretAccessKeyID])); err != nil {
		t.Fatal(err)
	}
	if err := admin.PutUserPolicy(ctx, r.Principal, iamPolicyName, policy.ForBucket("payroll", []string{"s3:ListBucket"}, []string{"s3:GetObject"}).JSON()); err != nil {
		t.Fatal(err)
	}
	if err := admin.PutUserPolicy(ctx, r.Principal, "extra", policy.ForBucket("payroll", []string{"s3:ListBucket"}, nil).JSON()); err != nil {
		t.Fatal(err)
	}
	clean := access("clean", "ReadOnly", 1)
	if _, err := be.Grant(ctx, clean); err != nil {
		t.Fatal(err)
	}
	drifted, err := be.SweepCredentials(ctx, []drivers.Access{w3, r, clean})
	if err != nil || len(drifted) != 2 || drifted[0] != 0 || drifted[1] != 1 {
		t.Fatalf("sweep: want accesses 0 and 1 drifted, got %v (%v)", drifted, err)
	}
	gw, err := be.Grant(ctx, w3)
	if err != nil {
		t.Fatal(err)
	}
	r.Assert, r.Secret = drivers.Reassert, be.SecretFrom(r.Principal, gr.Data)
	if _, err := be.Grant(ctx, r); err != nil {
		t.Fatal(err)
	}
	if drifted, err := be.SweepCredentials(ctx, []drivers.Access{{Resource: "ledger", Role: "ReadWrite", Principal: w.Principal}, r}); err != nil || len(drifted) != 0 {
		t.Fatalf("after the re-asserts: want no drift, got %v (%v)", drifted, err)
	}
	if err := ro.list("payroll"); err == nil {
		t.Error("the reader's repaired policies still reach payroll")
	}
	if names, err := admin.ListUserPolicies(ctx, r.Principal); err != nil || len(names) != 1 || names[0] != iamPolicyName {
		t.Errorf("after the repair: want only policy %s, got %v (%v)", iamPolicyName, names, err)
	}
	if err := seaweedAs(srv, gw.Data).put("ledger", "again"); err != nil {
		t.Errorf("the writer's new key after the repair: %v", err)
	}

	// Revocation: the key fails at once, the user is gone; again is
	// success.
	if err := be.Revoke(ctx, w3); err != nil {
		t.Fatal(err)
	}
	if err := be.Revoke(ctx, w3); err != nil {
		t.Fatalf("revoke again: %v", err)
	}
	if err := seaweedAs(srv, gw.Data).list("ledger"); err == nil {
		t.Error("a revoked key still works")
	}
	if found, err := be.InspectPrincipal(ctx, w.Principal); err != nil || found {
		t.Errorf("after revocation: want the user gone, got %v (%v)", found, err)
	}
	issued, err := be.IssuedCredentials(ctx)
	if err != nil || issued[w.Principal] || !issued[r.Principal] {
		t.Errorf("issued keys: want %s and not %s, got %v (%v)", r.Principal, w.Principal, issued, err)
	}

	// A user of that name made by someone else since the controller saw
	// it absent is not taken over.
	f := access("foreign", "ReadWrite", 1)
	if _, err := admin.CreateUser(ctx, f.Principal, "/", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Grant(ctx, f); !drivers.IsPrincipalExists(err) {
		t.Fatalf("a foreign user: want PrincipalExistsError, got %v", err)
	}
	if keys, err := admin.ListAccessKeys(ctx, f.Principal); err != nil || len(keys) != 0 {
		t.Errorf("the foreign user got keys: %v (%v)", keys, err)
	}
}

// TestIAMSweepOutlastsOneRequestTimeout: the IAM sweep is three requests
// per access, each bounded by requestTimeout, the whole only by the
// caller: through a proxy that holds every request 100 ms, a sweep of 8
// accesses (25 requests, 2.5 s) judges every one with a requestTimeout of
// 1 s (one requestTimeout for the whole sweep ran out at a few hundred
// accesses on a real server, judging only those it reached).
func TestIAMSweepOutlastsOneRequestTimeout(t *testing.T) {
	srv, be, _ := iamFixture(t)
	ctx := context.Background()
	slow := slowProxy(t, srv.Endpoint, 100*time.Millisecond)
	if err := (s3Ops{t: t, cl: rawClient(t, be.cfg, be.cfg.Endpoint)}).createBucket("ledger"); err != nil {
		t.Fatal(err)
	}
	var as []drivers.Access
	for i := range 8 {
		a := drivers.Access{Resource: "ledger", Namespace: "team", Name: fmt.Sprintf("a%d", i), UID: fmt.Sprintf("uid-sweep-%d", i), Role: drivers.RoleReadOnly, Assert: drivers.IssueRecorded}
		a.Principal = be.Principal(a, 1)
		if _, err := be.Grant(ctx, a); err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	cfg := *be.cfg
	cfg.Credentials = &Credentials{IAMEndpoint: slow.URL}
	cfg.RequestTimeout = drivers.Duration{Duration: time.Second}
	slowBe, _ := open(t, &cfg)
	start := time.Now()
	drifted, err := slowBe.SweepCredentials(ctx, as)
	if err != nil || len(drifted) != 0 {
		t.Fatalf("sweep of %d accesses through the slow proxy: want all judged, none drifted, got %v (%v)", len(as), drifted, err)
	}
	if took := time.Since(start); took < cfg.RequestTimeout.Duration {
		t.Errorf("the sweep took %v: want longer than one requestTimeout (%v), or the test proves nothing", took, cfg.RequestTimeout.Duration)
	}
}

// TestIAMGrantOutlastsOneRequestTimeout: a re-assertion on IAM makes five
// requests and more (CreateUser, PutUserPolicy, ListUserPolicies,
// ListAccessKeys, GetUser...), each bounded by requestTimeout. Through a
// proxy that holds every request 400 ms, with a requestTimeout of 1 s,
// the grant and the revocation finish: one requestTimeout for the whole
// grant ran out after its third request, on every pass, and a server
// answering in a fraction of requestTimeout never had its keys
// re-asserted or revoked.
func TestIAMGrantOutlastsOneRequestTimeout(t *testing.T) {
	srv, be, _ := iamFixture(t)
	ctx := context.Background()
	if err := (s3Ops{t: t, cl: rawClient(t, be.cfg, be.cfg.Endpoint)}).createBucket("ledger"); err != nil {
		t.Fatal(err)
	}
	a := drivers.Access{Resource: "ledger", Namespace: "team", Name: "slow", UID: "uid-slow-grant", Role: drivers.RoleReadWrite, Assert: drivers.IssueRecorded}
	a.Principal = be.Principal(a, 1)
	g, err := be.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	slow := slowProxy(t, srv.Endpoint, 400*time.Millisecond)
	cfg := *be.cfg
	cfg.Credentials = &Credentials{IAMEndpoint: slow.URL}
	cfg.RequestTimeout = drivers.Duration{Duration: time.Second}
	slowBe, _ := open(t, &cfg)
	again := a
	again.Assert, again.Secret = drivers.Reassert, be.SecretFrom(a.Principal, g.Data)
	start := time.Now()
	g2, err := slowBe.Grant(ctx, again)
	if err != nil {
		t.Fatalf("re-assertion through the slow proxy: %v", err)
	}
	if took := time.Since(start); took < cfg.RequestTimeout.Duration {
		t.Errorf("the re-assertion took %v: want longer than one requestTimeout (%v), or the test proves nothing", took, cfg.RequestTimeout.Duration)
	}
	if string(g2.Data[SecretAccessKeyID]) != string(g.Data[SecretAccessKeyID]) {
		t.Errorf("want the key kept by the re-assertion, got %s for %s", g2.Data[SecretAccessKeyID], g.Data[SecretAccessKeyID])
	}
	if err := slowBe.Revoke(ctx, a); err != nil {
		t.Fatalf("revocation through the slow proxy: %v", err)
	}
	if exists, err := be.InspectPrincipal(ctx, a.Principal); err != nil || exists {
		t.Errorf("want user %s gone after the revocation, got exists %v (%v)", a.Principal, exists, err)
	}
}

// TestIAMRevokeTakesOnlyDeleteUserForGone: an eventually consistent IAM
// (AWS; SeaweedFS with several filers) may answer a ListAccessKeys just
// after CreateUser with NoSuchEntity though the user exists. Through a
// proxy that answers the revocation's first ListAccessKeys so, in front
// of a SeaweedFS holding the user and its key, the revocation either
// fails (the record stays, and the revocation is tried again) or leaves
// the user really gone: it never reports done with the user and its key
// alive, which would leave them live with nothing naming them.
func TestIAMRevokeTakesOnlyDeleteUserForGone(t *testing.T) {
	srv, be, admin := iamFixture(t)
	ctx := context.Background()
	if err := (s3Ops{t: t, cl: rawClient(t, be.cfg, be.cfg.Endpoint)}).createBucket("ledger"); err != nil {
		t.Fatal(err)
	}
	a := drivers.Access{Resource: "ledger", Namespace: "team", Name: "lagged", UID: "uid-lagged-revoke", Role: drivers.RoleReadWrite, Assert: drivers.IssueRecorded}
	a.Principal = be.Principal(a, 1)
	g, err := be.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	// The first ListAccessKeys only: the next read sees the user.
	var listed atomic.Int32
	lying, _, lied := lyingProxy(t, srv.Endpoint, func(r *http.Request) bool {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return false
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, err := url.ParseQuery(string(body))
		return err == nil && form.Get("Action") == "ListAccessKeys" && listed.Add(1) == 1
	}, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>The user with name `+a.Principal+` cannot be found.</Message></Error><RequestId>lagged</RequestId></ErrorResponse>`)
	})
	cfg := *be.cfg
	cfg.Credentials = &Credentials{IAMEndpoint: lying.URL}
	lagged, _ := open(t, &cfg)
	rerr := lagged.Revoke(ctx, a)
	if lied.Load() != 1 {
		t.Fatalf("want the revocation's ListAccessKeys answered NoSuchEntity once, the proxy lied %d times", lied.Load())
	}
	_, gerr := admin.GetUser(ctx, a.Principal)
	switch {
	case rerr == nil && !iam.IsNoSuchEntity(gerr):
		ops := seaweedAs(srv, g.Data)
		ops.t = t
		t.Fatalf("revoke after a NoSuchEntity list: reported done, but the user is still there (GetUser: %v; its key puts: %v)", gerr, ops.put("ledger", "after-revoke"))
	case rerr != nil && iam.IsNoSuchEntity(gerr):
		t.Errorf("revoke after a NoSuchEntity list: the user is gone, but the revocation failed: %v", rerr)
	}
	// Tried again, as the controller does while the record stays: done,
	// and the user gone with its key.
	if rerr != nil {
		t.Logf("the revocation after a NoSuchEntity list failed, to be tried again: %v", rerr)
		if err := lagged.Revoke(ctx, a); err != nil {
			t.Fatalf("revoke again: %v", err)
		}
	}
	if _, err := admin.GetUser(ctx, a.Principal); !iam.IsNoSuchEntity(err) {
		t.Errorf("after the revocation: want GetUser NoSuchEntity, got %v", err)
	}
	ops := seaweedAs(srv, g.Data)
	ops.t = t
	if err := ops.put("ledger", "after-revoke"); err == nil {
		t.Error("the revoked key still puts")
	}
}
