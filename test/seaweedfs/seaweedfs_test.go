package seaweedfs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
)

// The actions of buckety's ReadWrite role (drivers/s3/roles.go).
var (
	readWriteBucket = []string{"s3:ListBucket", "s3:GetBucketLocation", "s3:ListBucketMultipartUploads"}
	readWriteObject = []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}
)

func s3Client(endpoint, key, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region: Region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(key, secret, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// A refusal must surface as it is, not after retries.
		RetryMaxAttempts: 1,
	})
}

// code is the S3 error code of err, "" for none.
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// refused fails the test unless err is the S3 refusal of a key: AccessDenied
// for a known key, InvalidAccessKeyId for a key the server does not know.
func refused(t *testing.T, what string, err error, codes ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: want refused (%s), got success", what, strings.Join(codes, " or "))
		return
	}
	if !slices.Contains(codes, code(err)) {
		t.Errorf("%s: want %s, got %v", what, strings.Join(codes, " or "), err)
	}
}

// TestKeyPerAccess is what the s3 driver will do on an IAM-compatible
// server: the admin creates a user, a key and an inline policy on one
// bucket; the key then reaches that bucket only, creates none, administers
// nothing, and stops working once deleted.
func TestKeyPerAccess(t *testing.T) {
	t0 := time.Now()
	srv := Start(t, Options{})
	t.Logf("SeaweedFS serves S3 and IAM %v after start", time.Since(t0).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := s3Client(srv.Endpoint, srv.AccessKey, srv.SecretKey)
	adminIAM := srv.IAM()
	for _, b := range []string{"bucket-b", "bucket-c"} {
		if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			t.Fatalf("admin creates %s: %v", b, err)
		}
	}
	if _, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-c"), Key: aws.String("theirs"), Body: strings.NewReader("c")}); err != nil {
		t.Fatalf("admin puts into bucket-c: %v", err)
	}

	const user = "bky0123456789ab"
	if _, err := adminIAM.CreateUser(ctx, user, "/buckety/", []iam.Tag{{Key: "buckety.yolean.se/access", Value: "ns/name"}}); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	key, err := adminIAM.CreateAccessKey(ctx, user)
	if err != nil {
		t.Fatalf("CreateAccessKey: %v", err)
	}
	if key.AccessKeyID == "" || len(key.SecretAccessKey) < 40 || key.UserName != user || key.Status != "Active" {
		t.Fatalf("want an active key with a 40-character secret for %s, got %+v", user, key)
	}
	if err := adminIAM.PutUserPolicy(ctx, user, "buckety", policy.ForBucket("bucket-b", readWriteBucket, readWriteObject).JSON()); err != nil {
		t.Fatalf("PutUserPolicy: %v", err)
	}

	// No retries anywhere below: on SeaweedFS a new key and a new policy
	// are in force as soon as the call returns.
	tenant := s3Client(srv.Endpoint, key.AccessKeyID, key.SecretAccessKey)
	t.Run("own bucket", func(t *testing.T) {
		if _, err := tenant.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("k"), Body: strings.NewReader("hello")}); err != nil {
			t.Fatalf("put: %v", err)
		}
		out, err := tenant.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("k")})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if string(b) != "hello" {
			t.Errorf("get: want hello, got %q", b)
		}
		list, err := tenant.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket-b")})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(list.Contents) != 1 || aws.ToString(list.Contents[0].Key) != "k" {
			t.Errorf("list: want [k], got %d objects", len(list.Contents))
		}
		multipart(ctx, t, tenant, "bucket-b", "big")
		if _, err := tenant.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("k")}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
	t.Run("other bucket", func(t *testing.T) {
		_, err := tenant.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-c"), Key: aws.String("k"), Body: strings.NewReader("x")})
		refused(t, "put into bucket-c", err, "AccessDenied")
		_, err = tenant.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket-c"), Key: aws.String("theirs")})
		refused(t, "get from bucket-c", err, "AccessDenied")
		_, err = tenant.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket-c")})
		refused(t, "list bucket-c", err, "AccessDenied")
		_, err = tenant.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bucket-c"), Key: aws.String("theirs")})
		refused(t, "delete from bucket-c", err, "AccessDenied")
	})
	t.Run("bucket administration", func(t *testing.T) {
		_, err := tenant.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket-d")})
		refused(t, "create bucket-d", err, "AccessDenied")
		_, err = tenant.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("bucket-b")})
		refused(t, "delete bucket-b", err, "AccessDenied")
		_, err = tenant.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("bucket-b"), Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bucket-c/*"}]}`)})
		refused(t, "put the policy of bucket-b", err, "AccessDenied")
		// ListBuckets is not refused: SeaweedFS filters it to the buckets
		// the key may list (AWS would refuse it without
		// s3:ListAllMyBuckets, and list every bucket of the account with).
		out, err := tenant.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatalf("list buckets: %v", err)
		}
		var names []string
		for _, b := range out.Buckets {
			names = append(names, aws.ToString(b.Name))
		}
		if !slices.Equal(names, []string{"bucket-b"}) {
			t.Errorf("list buckets: want [bucket-b], got %v", names)
		}
	})
	t.Run("iam", func(t *testing.T) {
		mine := iam.New(srv.Endpoint, Region, key.AccessKeyID, key.SecretAccessKey, nil)
		if _, err := mine.ListUsers(ctx, ""); !iam.IsAccessDenied(err) {
			t.Errorf("ListUsers: want AccessDenied, got %v", err)
		}
		if _, err := mine.CreateUser(ctx, "intruder", "", nil); !iam.IsAccessDenied(err) {
			t.Errorf("CreateUser: want AccessDenied, got %v", err)
		}
		if _, err := mine.CreateAccessKey(ctx, user); !iam.IsAccessDenied(err) {
			t.Errorf("CreateAccessKey for itself: want AccessDenied, got %v", err)
		}
		if err := mine.PutUserPolicy(ctx, user, "more", policy.ForBucket("bucket-c", nil, []string{"s3:GetObject"}).JSON()); !iam.IsAccessDenied(err) {
			t.Errorf("PutUserPolicy on itself: want AccessDenied, got %v", err)
		}
		if err := mine.DeleteAccessKey(ctx, user, key.AccessKeyID); !iam.IsAccessDenied(err) {
			t.Errorf("DeleteAccessKey of its own key: want AccessDenied, got %v", err)
		}
	})

	if err := adminIAM.DeleteAccessKey(ctx, user, key.AccessKeyID); err != nil {
		t.Fatalf("DeleteAccessKey: %v", err)
	}
	_, err = tenant.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("after"), Body: strings.NewReader("x")})
	refused(t, "put with the deleted key", err, "InvalidAccessKeyId")
	_, err = tenant.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket-b")})
	refused(t, "list with the deleted key", err, "InvalidAccessKeyId")
	gone := iam.New(srv.Endpoint, Region, key.AccessKeyID, key.SecretAccessKey, nil)
	if _, err := gone.GetUser(ctx, user); iam.CodeOf(err) != iam.CodeInvalidClientTokenID {
		t.Errorf("IAM with the deleted key: want InvalidClientTokenId, got %v", err)
	}

	if err := adminIAM.DeleteUserAndKeys(ctx, user); err != nil {
		t.Fatalf("DeleteUserAndKeys: %v", err)
	}
	if _, err := adminIAM.GetUser(ctx, user); !iam.IsNoSuchEntity(err) {
		t.Errorf("GetUser after delete: want NoSuchEntity, got %v", err)
	}
}

// multipart uploads two parts (5 MiB and 1 byte) and completes them.
func multipart(ctx context.Context, t *testing.T, cl *s3.Client, bucket, key string) {
	t.Helper()
	up, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("multipart: create: %v", err)
	}
	var parts []types.CompletedPart
	for i, body := range [][]byte{bytes.Repeat([]byte("a"), 5<<20), []byte("b")} {
		n := int32(i + 1)
		out, err := cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId, PartNumber: aws.Int32(n), Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatalf("multipart: part %d: %v", n, err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	if _, err := cl.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId}); err != nil {
		t.Errorf("multipart: list parts: %v", err)
	}
	if _, err := cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatalf("multipart: complete: %v", err)
	}
	head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("multipart: head: %v", err)
	}
	if got := aws.ToInt64(head.ContentLength); got != 5<<20+1 {
		t.Errorf("multipart: want %d bytes, got %d", 5<<20+1, got)
	}
	// An abandoned upload can be aborted.
	up2, err := cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key + "-abandoned")})
	if err != nil {
		t.Fatalf("multipart: create the second: %v", err)
	}
	if _, err := cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key + "-abandoned"), UploadId: up2.UploadId}); err != nil {
		t.Errorf("multipart: abort: %v", err)
	}
	if _, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Errorf("multipart: delete: %v", err)
	}
}

// TestIAMBehaviour pins what SeaweedFS's IAM API does where AWS IAM does
// otherwise, and what they share, as the s3 driver will rely on it. A
// failure after a SeaweedFS upgrade means its behaviour changed: update the
// notes in drivers/s3/iam and this test together.
func TestIAMBehaviour(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := srv.S3()
	adminIAM := srv.IAM()
	if _, err := admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("seed"), Body: strings.NewReader("s")}); err != nil {
		t.Fatal(err)
	}
	status := func(err error) int {
		var e *iam.Error
		if errors.As(err, &e) {
			return e.Status
		}
		return 0
	}

	t.Run("paths and tags are dropped", func(t *testing.T) {
		u, err := adminIAM.CreateUser(ctx, "tagged", "/buckety/", []iam.Tag{{Key: "k", Value: "v"}})
		if err != nil {
			t.Fatal(err)
		}
		if u.Path != "/" || len(u.Tags) != 0 {
			t.Errorf("CreateUser: want path / and no tags (AWS keeps both), got %q and %v", u.Path, u.Tags)
		}
		if u, err = adminIAM.GetUser(ctx, "tagged"); err != nil || u.Path != "/" {
			t.Errorf("GetUser: want path /, got %q (%v)", u.Path, err)
		}
		if tags, err := adminIAM.ListUserTags(ctx, "tagged"); err != nil || len(tags) != 0 {
			t.Errorf("ListUserTags: want none, got %v (%v)", tags, err)
		}
		// The prefix is ignored: the static admin is listed too.
		users, err := adminIAM.ListUsers(ctx, "/buckety/")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range users {
			names = append(names, u.UserName)
		}
		if !slices.Contains(names, "buckety-admin") || !slices.Contains(names, "tagged") {
			t.Errorf("ListUsers /buckety/: want every user (the prefix ignored), got %v", names)
		}
		// TagUser keeps them.
		if err := adminIAM.TagUser(ctx, "tagged", []iam.Tag{{Key: "k", Value: "v"}}); err != nil {
			t.Fatal(err)
		}
		if tags, err := adminIAM.ListUserTags(ctx, "tagged"); err != nil || len(tags) != 1 || tags[0] != (iam.Tag{Key: "k", Value: "v"}) {
			t.Errorf("ListUserTags after TagUser: want [k=v], got %v (%v)", tags, err)
		}
	})

	t.Run("error codes", func(t *testing.T) {
		if _, err := adminIAM.CreateUser(ctx, "tagged", "", nil); !iam.IsEntityAlreadyExists(err) || status(err) != 409 {
			t.Errorf("CreateUser twice: want EntityAlreadyExists (409), got %v", err)
		}
		if _, err := adminIAM.GetUser(ctx, "nobody"); !iam.IsNoSuchEntity(err) || status(err) != 404 {
			t.Errorf("GetUser of nobody: want NoSuchEntity (404), got %v", err)
		}
		if _, err := adminIAM.CreateAccessKey(ctx, "nobody"); !iam.IsNoSuchEntity(err) {
			t.Errorf("CreateAccessKey for nobody: want NoSuchEntity, got %v", err)
		}
		if err := adminIAM.PutUserPolicy(ctx, "nobody", "p", policy.ForBucket("bucket-b", nil, []string{"s3:GetObject"}).JSON()); !iam.IsNoSuchEntity(err) {
			t.Errorf("PutUserPolicy for nobody: want NoSuchEntity, got %v", err)
		}
		if _, err := adminIAM.GetUserPolicy(ctx, "tagged", "none"); !iam.IsNoSuchEntity(err) {
			t.Errorf("GetUserPolicy of no policy: want NoSuchEntity, got %v", err)
		}
		// Where AWS answers NoSuchEntity, SeaweedFS answers success.
		if keys, err := adminIAM.ListAccessKeys(ctx, "nobody"); err != nil || len(keys) != 0 {
			t.Errorf("ListAccessKeys of nobody: want none and no error (AWS: NoSuchEntity), got %v (%v)", keys, err)
		}
		if err := adminIAM.DeleteAccessKey(ctx, "tagged", "AKIAUNKNOWNUNKNOWN00"); err != nil {
			t.Errorf("DeleteAccessKey of an unknown key: want success (AWS: NoSuchEntity), got %v", err)
		}
		if err := adminIAM.DeleteUserPolicy(ctx, "tagged", "none"); err != nil {
			t.Errorf("DeleteUserPolicy of no policy: want success (AWS: NoSuchEntity), got %v", err)
		}
		// Only Allow statements: a Deny is refused.
		deny := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":["s3:DeleteObject"],"Resource":["arn:aws:s3:::bucket-b/*"]}]}`)
		if err := adminIAM.PutUserPolicy(ctx, "tagged", "deny", deny); iam.CodeOf(err) != iam.CodeMalformedPolicy {
			t.Errorf("PutUserPolicy with a Deny: want MalformedPolicyDocument (AWS accepts it), got %v", err)
		}
	})

	t.Run("keys", func(t *testing.T) {
		// No limit of two.
		var ids []string
		for i := 0; i < 3; i++ {
			k, err := adminIAM.CreateAccessKey(ctx, "tagged")
			if err != nil {
				t.Fatalf("CreateAccessKey #%d: want success (AWS: LimitExceeded on the third), got %v", i+1, err)
			}
			ids = append(ids, k.AccessKeyID)
		}
		keys, err := adminIAM.ListAccessKeys(ctx, "tagged")
		if err != nil || len(keys) != 3 {
			t.Errorf("ListAccessKeys: want 3, got %v (%v)", keys, err)
		}
		// A key named under another user is not deleted (and no error).
		if _, err := adminIAM.CreateUser(ctx, "other", "", nil); err != nil {
			t.Fatal(err)
		}
		if err := adminIAM.DeleteAccessKey(ctx, "other", ids[0]); err != nil {
			t.Errorf("DeleteAccessKey under the wrong user: want success, got %v", err)
		}
		if keys, _ := adminIAM.ListAccessKeys(ctx, "tagged"); len(keys) != 3 {
			t.Errorf("want the key kept when named under another user, got %d keys", len(keys))
		}
		if err := adminIAM.DeleteUser(ctx, "tagged"); !iam.IsDeleteConflict(err) || status(err) != 409 {
			t.Errorf("DeleteUser with keys: want DeleteConflict (409), got %v", err)
		}
		for _, id := range ids {
			if err := adminIAM.DeleteAccessKey(ctx, "tagged", id); err != nil {
				t.Fatal(err)
			}
		}
		// With an inline policy but no keys the user goes (AWS:
		// DeleteConflict), and its policies with it.
		if err := adminIAM.PutUserPolicy(ctx, "tagged", "p", policy.ForBucket("bucket-b", nil, []string{"s3:GetObject"}).JSON()); err != nil {
			t.Fatal(err)
		}
		if err := adminIAM.DeleteUser(ctx, "tagged"); err != nil {
			t.Errorf("DeleteUser with a policy and no keys: want success, got %v", err)
		}
		if _, err := adminIAM.CreateUser(ctx, "tagged", "", nil); err != nil {
			t.Fatal(err)
		}
		if names, err := adminIAM.ListUserPolicies(ctx, "tagged"); err != nil || len(names) != 0 {
			t.Errorf("a user re-created under the name: want no policies, got %v (%v)", names, err)
		}
	})

	// Keys of three roles, kept for the restart below.
	roles := map[string]struct{ bucket, object []string }{
		"ro": {[]string{"s3:ListBucket"}, []string{"s3:GetObject"}},
		"wo": {nil, []string{"s3:PutObject"}},
	}
	clients := map[string]*s3.Client{}
	for name, r := range roles {
		if _, err := adminIAM.CreateUser(ctx, name, "", nil); err != nil {
			t.Fatal(err)
		}
		k, err := adminIAM.CreateAccessKey(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := adminIAM.PutUserPolicy(ctx, name, "buckety", policy.ForBucket("bucket-b", r.bucket, r.object).JSON()); err != nil {
			t.Fatal(err)
		}
		clients[name] = s3Client(srv.Endpoint, k.AccessKeyID, k.SecretAccessKey)
	}
	// enforced checks each action on its own: the policy engine evaluates
	// the S3 action of the request, not a coarse Read/Write grant.
	enforced := func(t *testing.T) {
		ro, wo := clients["ro"], clients["wo"]
		if _, err := ro.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("seed")}); err != nil {
			t.Errorf("ReadOnly get: %v", err)
		}
		if _, err := ro.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket-b")}); err != nil {
			t.Errorf("ReadOnly list: %v", err)
		}
		_, err := ro.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("ro"), Body: strings.NewReader("x")})
		refused(t, "ReadOnly put", err, "AccessDenied")
		_, err = ro.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bucket-b"), Key: aws.String("ro")})
		refused(t, "ReadOnly multipart", err, "AccessDenied")
		_, err = ro.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("seed")})
		refused(t, "ReadOnly delete", err, "AccessDenied")
		if _, err := wo.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("wo"), Body: strings.NewReader("x")}); err != nil {
			t.Errorf("PutObject-only put: %v", err)
		}
		_, err = wo.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("seed")})
		refused(t, "PutObject-only delete", err, "AccessDenied")
		_, err = wo.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("seed")})
		refused(t, "PutObject-only get", err, "AccessDenied")
		_, err = wo.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bucket-b")})
		refused(t, "PutObject-only list", err, "AccessDenied")
	}
	t.Run("actions", enforced)

	t.Run("restart", func(t *testing.T) {
		if err := adminIAM.TagUser(ctx, "wo", []iam.Tag{{Key: "k", Value: "v"}}); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		t.Logf("restarted and taking writes after %v", time.Since(t0).Round(time.Millisecond))
		users, err := adminIAM.ListUsers(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, u := range users {
			names = append(names, u.UserName)
		}
		slices.Sort(names)
		if want := []string{"buckety-admin", "other", "ro", "tagged", "wo"}; !slices.Equal(names, want) {
			t.Errorf("users after restart: want %v, got %v", want, names)
		}
		if tags, err := adminIAM.ListUserTags(ctx, "wo"); err != nil || len(tags) != 1 {
			t.Errorf("tags after restart: want [k=v], got %v (%v)", tags, err)
		}
		if names, err := adminIAM.ListUserPolicies(ctx, "wo"); err != nil || !slices.Equal(names, []string{"buckety"}) {
			t.Errorf("policies after restart: want [buckety], got %v (%v)", names, err)
		}
		enforced(t)
	})
}

// TestSelfServiceKeys shows why Start sets
// -s3.iam.selfServiceRequiresGrant: by default any key may create more keys
// for its own user, which its owner never sees and which outlive the one
// buckety deletes.
func TestSelfServiceKeys(t *testing.T) {
	srv := Start(t, Options{SelfServiceKeys: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adminIAM := srv.IAM()
	if _, err := srv.S3().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := adminIAM.CreateUser(ctx, "tenant", "", nil); err != nil {
		t.Fatal(err)
	}
	key, err := adminIAM.CreateAccessKey(ctx, "tenant")
	if err != nil {
		t.Fatal(err)
	}
	if err := adminIAM.PutUserPolicy(ctx, "tenant", "buckety", policy.ForBucket("bucket-b", readWriteBucket, readWriteObject).JSON()); err != nil {
		t.Fatal(err)
	}
	mine := iam.New(srv.Endpoint, Region, key.AccessKeyID, key.SecretAccessKey, nil)
	extra, err := mine.CreateAccessKey(ctx, "")
	if err != nil {
		t.Fatalf("CreateAccessKey by the tenant for itself: want success by default, got %v", err)
	}
	if extra.UserName != "tenant" {
		t.Errorf("want the extra key under user tenant, got %q", extra.UserName)
	}
	if err := adminIAM.DeleteAccessKey(ctx, "tenant", key.AccessKeyID); err != nil {
		t.Fatal(err)
	}
	other := s3Client(srv.Endpoint, extra.AccessKeyID, extra.SecretAccessKey)
	if _, err := other.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Errorf("the extra key after buckety's is deleted: want it still working, got %v", err)
	}
	// What buckety's revocation must therefore do: every key of the user.
	if err := adminIAM.DeleteUserAndKeys(ctx, "tenant"); err != nil {
		t.Fatal(err)
	}
	_, err = other.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bucket-b"), Key: aws.String("k"), Body: strings.NewReader("x")})
	refused(t, "the extra key after DeleteUserAndKeys", err, "InvalidAccessKeyId")
}
