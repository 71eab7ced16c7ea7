package s3

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// policyReadsNotFound opens another backend on fx's server, through a
// proxy that, while lies is set (not to begin with), answers bucket's
// GetBucketPolicy 404 without a body, counting those answers in lied.
func (fx *fixture) policyReadsNotFound(t *testing.T, bucket string) (be *Backend, lies *atomic.Bool, lied *atomic.Int32) {
	t.Helper()
	lying, lies, lied := lyingProxy(t, fx.srv.Endpoint, func(r *http.Request) bool {
		return isPolicyRead(r) && strings.Trim(r.URL.Path, "/") == bucket
	}, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	lies.Store(false)
	be, _, _ = fx.through(t, lying, nil)
	scopingOf(t, be)
	return be, lies, lied
}

// TestVersityGrantTakenAwayOnlyFromABucketSaidGone: on VersityGW a key's
// grant lives in its buckets' policies, and a Drop or a Revoke skips a
// bucket that is gone. A GetBucketPolicy answered 404 without a body (a
// proxy in a rollout, a node whose bucket metadata lags; the SDK calls
// it NotFound) says nothing of the bucket: taken for gone, the Drop said
// the grant was taken away and the Revoke deleted the user, while the
// policy still named the key, and nothing looked again (the watch of the
// dropped grant was forgotten with it): a user made again under the
// principal later had its old rights on a bucket withdrawn from it. Both
// now fail while the 404 says nothing, and take the grant away once the
// server answers; a bucket the server says is gone (NoSuchBucket) is
// still skipped.
func TestVersityGrantTakenAwayOnlyFromABucketSaidGone(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	ctx := context.Background()
	scopingOf(t, fx.backend)
	for _, bucket := range []string{"kept", "shared", "gone"} {
		fx.ensure(t, bucket, nil)
	}
	be, lies, lied := fx.policyReadsNotFound(t, "shared")

	p := drivers.Access{Namespace: "team-p", Name: "p", UID: "uid-404-p", Role: drivers.RoleReadWrite, Resource: "kept", Several: severalOf("kept", "shared"), Assert: drivers.IssueNew}
	p.Principal = be.Principal(p, 1)
	gp, err := be.Grant(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	pOps := s3Ops{t, s3As(fx.srv, p.Principal, string(gp.Data[SecretSecretAccessKey]))}
	wantOK(t, "P puts in shared while granted", pOps.put("shared", "p"))
	grantOn := func(bucket string) string {
		t.Helper()
		got, err := bucketyGrants(fx.policyOf(t, fx.backend, bucket))
		if err != nil {
			t.Fatal(err)
		}
		return got[p.Principal]
	}

	// The Drop of shared while its policy read answers a bodiless 404.
	lies.Store(true)
	p.Several, p.Drop, p.Assert, p.Secret = severalOf("kept"), []string{"shared"}, drivers.Reassert, be.SecretFrom(p.Principal, gp.Data)
	if _, err := be.Grant(ctx, p); err == nil {
		t.Error("Drop of shared while its policy read answers 404 without a body: want an error, got success")
	}
	if lied.Load() == 0 {
		t.Fatal("the proxy answered no GetBucketPolicy: the test proves nothing")
	}
	lies.Store(false)
	if _, err := be.Grant(ctx, p); err != nil {
		t.Fatalf("Drop of shared once the server answers: %v", err)
	}
	if role := grantOn("shared"); role != "" {
		t.Errorf("after the Drop: want no grant of P on shared, got %q", role)
	}
	wantDenied(t, "P puts in shared once dropped", pOps.put("shared", "p2"))

	// The Revoke while kept's policy read answers a bodiless 404; a
	// bucket the server says is gone is skipped.
	be2, lies2, lied2 := fx.policyReadsNotFound(t, "kept")
	p.Drop = nil
	p.Several = severalOf("kept", "gone")
	if _, err := be2.Grant(ctx, p); err != nil {
		t.Fatalf("grant P on kept and gone: %v", err)
	}
	if role := grantOn("gone"); role == "" {
		t.Fatal("want P granted on gone before it is deleted")
	}
	if _, err := fx.raw.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String("gone")}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.raw.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("gone")}); err != nil {
		t.Fatal(err)
	}
	lies2.Store(true)
	if err := be2.Revoke(ctx, p); err == nil {
		t.Error("Revoke while kept's policy read answers 404 without a body: want an error, got success")
	}
	if lied2.Load() == 0 {
		t.Fatal("the second proxy answered no GetBucketPolicy: the test proves nothing")
	}
	wantOK(t, "P puts in kept while its revoke waits", pOps.put("kept", "p3"))
	lies2.Store(false)
	if err := be2.Revoke(ctx, p); err != nil {
		t.Fatalf("Revoke once the server answers (gone said NoSuchBucket): %v", err)
	}
	if role := grantOn("kept"); role != "" {
		t.Errorf("after the Revoke: want no grant of P on kept, got %q", role)
	}
	if err := pOps.put("kept", "p4"); err == nil {
		t.Error("P puts in kept after the Revoke: want refused, got success")
	}
}

// TestVersityAnonymousReadRemovedBesideAGrantOfAGoneUser: VersityGW
// refuses every policy that names a user it no longer knows, and a key's
// grant can outlive its user (a principal revoked by its name alone, a
// user deleted by hand). The grants' own writes drop such a grant and
// write again; the anonymous read statement's write did not, so a
// bucket's owner turning anonymousRead off got MalformedPolicy on every
// pass and the bucket stayed public until some grant was written there.
func TestVersityAnonymousReadRemovedBesideAGrantOfAGoneUser(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	cfg := *fx.cfg
	cfg.AllowAnonymousRead = true
	be, _ := open(t, &cfg)
	scopingOf(t, be)
	ctx := context.Background()
	const bucket = "media"
	if _, err := be.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: map[string]string{ParamAnonymousRead: "true"}}); err != nil {
		t.Fatal(err)
	}
	fx.put(t, bucket, "a.txt", "hello")
	fx.anonymousSees(t, bucket, map[string]int{"get": 200})
	p := drivers.Access{Namespace: "team-p", Name: "p", UID: "uid-gone-p", Role: drivers.RoleReadOnly, Resource: bucket, Assert: drivers.IssueNew}
	p.Principal = be.Principal(p, 1)
	if _, err := be.Grant(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := be.versityAdmin().DeleteUser(ctx, p.Principal); err != nil {
		t.Fatal(err)
	}

	res, err := be.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: map[string]string{ParamAnonymousRead: "false"}})
	if err != nil {
		t.Fatalf("anonymousRead false beside a grant of a user gone: %v", err)
	}
	if len(res.Changes) != 1 || res.Changes[0] != anonymousReadRemoved {
		t.Errorf("want the change %q, got %q", anonymousReadRemoved, res.Changes)
	}
	fx.anonymousSees(t, bucket, map[string]int{"get": 403})
	if got, err := bucketyGrants(fx.policyOf(t, be, bucket)); err != nil || got[p.Principal] != "" {
		t.Errorf("want the gone user's grant dropped with it, got %v (%v)", got, err)
	}
}

// TestInspectWaitsWhenTheRecordReadDidNotSeeTheBucket: a server answering
// from two views (a lagging node, a proxy in a rollout) said NoSuchBucket
// to the read of a bucket's owner record, and HEAD finds the bucket. An
// Inspect then does not report a bucket without a record, on which the
// controller would judge it someone else's (and revoke its accesses'
// keys): it fails as unavailable until a read sees the bucket and its
// record, as Ensure, Delete and Drain already did.
func TestInspectWaitsWhenTheRecordReadDidNotSeeTheBucket(t *testing.T) {
	fx := newFixture(t, ImplMinIO, s3test.Options{}, nil)
	ctx := context.Background()
	const bucket = "two-views"
	fx.ensure(t, bucket, nil)
	lying, _, lied := lyingProxy(t, fx.srv.Endpoint, func(r *http.Request) bool {
		return r.Method == http.MethodGet && r.URL.Query().Has("tagging") && strings.Trim(r.URL.Path, "/") == bucket
	}, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if _, err := w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message><BucketName>` + bucket + `</BucketName></Error>`)); err != nil {
			t.Error(err)
		}
	})
	cfg := *fx.cfg
	cfg.Endpoint = lying.URL
	be, _ := open(t, &cfg)
	if rec, err := be.ReadOwner(ctx, drivers.Resource{Name: bucket}); err != nil || rec != nil {
		t.Fatalf("the record read answered NoSuchBucket: want no record, got %+v, %v", rec, err)
	}
	if lied.Load() == 0 {
		t.Fatal("the proxy answered no GetBucketTagging: the test proves nothing")
	}
	in, err := be.Inspect(ctx, drivers.Resource{Name: bucket})
	if !drivers.IsUnavailable(err) {
		t.Errorf("Inspect after a record read that did not see the bucket: want unavailable, got %+v, %v", in, err)
	}
}
