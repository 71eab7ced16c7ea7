package s3

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
)

// TestIAMPolicyACLHeaders: s3:PutObjectAcl goes to the roles that upload,
// and only when asked.
func TestIAMPolicyACLHeaders(t *testing.T) {
	for _, tc := range []struct {
		role drivers.Role
		acl  bool
		want bool
	}{
		{drivers.RoleReadWrite, true, true}, {drivers.RoleWriteOnly, true, true}, {drivers.RoleReadOnly, true, false},
		{drivers.RoleReadWrite, false, false}, {drivers.RoleWriteOnly, false, false},
	} {
		p, err := iamAccessPolicy("media", tc.role, tc.acl)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(p), `"s3:PutObjectAcl"`); got != tc.want {
			t.Errorf("%s, aclHeaders %v: want s3:PutObjectAcl %v, got policy %s", tc.role, tc.acl, tc.want, p)
		}
	}
	// actionsOf is shared: appending must not change it.
	if strings.Contains(strings.Join(actionsOf[drivers.RoleReadWrite].Object, ","), "Acl") {
		t.Fatalf("actionsOf changed: %v", actionsOf[drivers.RoleReadWrite].Object)
	}
}

// TestSeaweedFSPublicACLBlock: on SeaweedFS, Ensure blocks and ignores
// public ACLs on the buckets it creates or converges (a dry run leaves
// them alone); a writer's key then may send ACL headers
// (rclone's X-Amz-Acl: private) and cannot make anything public, on
// upload, through PutObjectAcl or through PutBucketAcl. A block removed
// out of band narrows the keys at the next sweep and grant; Ensure sets
// it again. Without the block the same right serves objects to anyone,
// which is what the block is for (checked on a bucket without it).
func TestSeaweedFSPublicACLBlock(t *testing.T) {
	srv, be, admin := iamFixture(t)
	ctx := context.Background()
	root := rawClient(t, be.cfg, be.cfg.Endpoint)
	anonymousGet := func(bucket, key string) int {
		t.Helper()
		resp, err := http.Get(srv.Endpoint + "/" + bucket + "/" + key)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	blocked := func(bucket string) bool {
		t.Helper()
		ok, _, err := be.publicACLsBlocked(ctx, root, bucket)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	// The block is not a parameter: a dry run (an Adopt Buckety's check)
	// neither lists nor writes it.
	if err := (s3Ops{t: t, cl: root}).createBucket("media"); err != nil {
		t.Fatal(err)
	}
	res, err := be.Ensure(ctx, drivers.Resource{Name: "media", DryRun: true})
	if err != nil || len(res.Changes) != 0 || blocked("media") {
		t.Fatalf("dry run on a bucket without the block: want nothing listed or written, got %+v, %v, blocked %v", res, err, blocked("media"))
	}
	res, err = be.Ensure(ctx, drivers.Resource{Name: "media"})
	if err != nil || len(res.Changes) != 1 || !blocked("media") {
		t.Fatalf("Ensure: want the block set, got %+v, %v, blocked %v", res, err, blocked("media"))
	}
	if res, err := be.Ensure(ctx, drivers.Resource{Name: "media"}); err != nil || len(res.Changes) != 0 {
		t.Fatalf("Ensure again: want nothing to write, got %+v, %v", res, err)
	}
	if res, err := be.Ensure(ctx, drivers.Resource{Name: "fresh"}); err != nil || !res.Created || !blocked("fresh") {
		t.Fatalf("Ensure of a new bucket: want it created and blocked, got %+v, %v, blocked %v", res, err, blocked("fresh"))
	}

	access := func(name string, role drivers.Role) drivers.Access {
		a := drivers.Access{Resource: "media", Namespace: "team", Name: name, UID: "uid-" + name, Role: role, Assert: drivers.IssueRecorded}
		a.Principal = be.Principal(a, 1)
		return a
	}
	w, r := access("writer", drivers.RoleReadWrite), access("reader", drivers.RoleReadOnly)
	gw, err := be.Grant(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := be.Grant(ctx, r); err != nil {
		t.Fatal(err)
	}
	hasACL := func(a drivers.Access) bool {
		t.Helper()
		doc, err := admin.GetUserPolicy(ctx, a.Principal, iamPolicyName)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(doc), "s3:PutObjectAcl")
	}
	if !hasACL(w) || hasACL(r) {
		t.Fatalf("on a blocked bucket: want s3:PutObjectAcl for the writer only, got writer %v, reader %v", hasACL(w), hasACL(r))
	}
	writer := seaweedAs(srv, gw.Data).cl
	put := func(cl *s3.Client, bucket, key string, acl types.ObjectCannedACL) error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(key), ACL: acl})
		return err
	}
	if err := put(writer, "media", "private", types.ObjectCannedACLPrivate); err != nil {
		t.Fatalf("writer uploads with X-Amz-Acl: private (as rclone does): %v", err)
	}
	if err := put(writer, "media", "public", types.ObjectCannedACLPublicRead); err == nil {
		t.Error("writer uploads public-read: want refused")
	}
	if _, err := writer.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String("media"), Key: aws.String("private"), ACL: types.ObjectCannedACLPublicRead}); err == nil {
		t.Error("writer makes an object public-read (PutObjectAcl): want refused")
	}
	if _, err := writer.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String("media"), ACL: types.BucketCannedACLPublicRead}); err == nil {
		t.Error("writer makes the bucket public-read (PutBucketAcl): want refused")
	}
	if code := anonymousGet("media", "private"); code != http.StatusForbidden {
		t.Errorf("anonymous read on the blocked bucket: want 403, got %d", code)
	}

	// The block removed out of band: the sweep sees the writer's policy
	// too wide, and the grant narrows it.
	if _, err := root.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String("media")}); err != nil {
		t.Fatal(err)
	}
	drifted, err := be.SweepCredentials(ctx, []drivers.Access{w, r})
	if err != nil || len(drifted) != 1 || drifted[0] != 0 {
		t.Fatalf("sweep after the block was removed: want the writer drifted, got %v, %v", drifted, err)
	}
	again := w
	again.Assert, again.Secret = drivers.Reassert, be.SecretFrom(w.Principal, gw.Data)
	if _, err := be.Grant(ctx, again); err != nil || hasACL(w) {
		t.Fatalf("grant on a bucket without the block: want no s3:PutObjectAcl, got %v, %v", hasACL(w), err)
	}
	if err := put(writer, "media", "private2", types.ObjectCannedACLPrivate); err == nil {
		t.Error("writer uploads with an ACL header on a bucket without the block: want refused")
	}
	if res, err := be.Ensure(ctx, drivers.Resource{Name: "media"}); err != nil || len(res.Changes) != 1 || !blocked("media") {
		t.Fatalf("Ensure after the block was removed: want it set again, got %+v, %v", res, err)
	}
	if _, err := be.Grant(ctx, again); err != nil || !hasACL(w) {
		t.Fatalf("grant after Ensure set the block again: want s3:PutObjectAcl, got %v, %v", hasACL(w), err)
	}

	// The control: the same right on a bucket without the block makes
	// objects public.
	if err := (s3Ops{t: t, cl: root}).createBucket("open"); err != nil {
		t.Fatal(err)
	}
	if err := admin.PutUserPolicy(ctx, w.Principal, iamPolicyName, policy.ForBucket("open", nil, []string{"s3:PutObject", "s3:PutObjectAcl"}).JSON()); err != nil {
		t.Fatal(err)
	}
	if err := put(writer, "open", "public", types.ObjectCannedACLPublicRead); err != nil {
		t.Fatalf("control, no block: writer uploads public-read: %v", err)
	}
	if code := anonymousGet("open", "public"); code != http.StatusOK {
		t.Errorf("control, no block: want the public-read object served anonymously (200), got %d", code)
	}
}

// TestIAMSweepReadsEachBucketBlockOnce: a credential sweep reads a
// bucket's public access block once, however many of its accesses upload,
// and not for a role that does not upload.
func TestIAMSweepReadsEachBucketBlockOnce(t *testing.T) {
	srv, be, _ := iamFixture(t)
	ctx := context.Background()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var reads atomic.Int64
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("publicAccessBlock") {
			reads.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	defer counting.Close()
	cfg := *be.cfg
	cfg.Endpoint = counting.URL
	cbe, _ := open(t, &cfg)
	for _, bucket := range []string{"media", "logs"} {
		if _, err := cbe.Ensure(ctx, drivers.Resource{Name: bucket}); err != nil {
			t.Fatal(err)
		}
	}
	var as []drivers.Access
	for i, a := range []struct {
		bucket string
		role   drivers.Role
	}{{"media", drivers.RoleReadWrite}, {"media", drivers.RoleWriteOnly}, {"media", drivers.RoleReadWrite}, {"media", drivers.RoleReadOnly}, {"logs", drivers.RoleReadOnly}} {
		acc := drivers.Access{Resource: a.bucket, Namespace: "team", Name: fmt.Sprintf("a%d", i), UID: fmt.Sprintf("uid-once-%d", i), Role: a.role, Assert: drivers.IssueRecorded}
		acc.Principal = cbe.Principal(acc, 1)
		if _, err := cbe.Grant(ctx, acc); err != nil {
			t.Fatal(err)
		}
		as = append(as, acc)
	}
	reads.Store(0)
	drifted, err := cbe.SweepCredentials(ctx, as)
	if err != nil || len(drifted) != 0 {
		t.Fatalf("sweep: want none drifted, got %v, %v", drifted, err)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("sweep of three uploading accesses on one bucket and two readers: want 1 public access block read, got %d", n)
	}
}
