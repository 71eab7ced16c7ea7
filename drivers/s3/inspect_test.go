package s3

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
)

// TestInspectForeignBucketIsContent: with keys that reach only some of the
// server's buckets (a least-privilege controller user, or on AWS another
// account's bucket of the name), a bucket that answers HeadBucket 403 is
// someone else's: it exists and counts as content, so the Buckety is
// refused adoption and told so, not told that the backend refuses the
// controller's keys. Keys the server does not know still read as refused.
func TestInspectForeignBucketIsContent(t *testing.T) {
	srv, m, _ := startMinIOAdmin(t)
	ctx := context.Background()
	raw := s3As(srv, srv.AccessKey, srv.SecretKey)
	if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("foreign")}); err != nil {
		t.Fatal(err)
	}
	doc := policy.ForBucket("mine-*", []string{"s3:*"}, []string{"s3:*"})
	doc.Statement = append(doc.Statement, policy.Statement{Effect: "Allow", Action: []string{"s3:ListAllMyBuckets"}, Resource: []string{"arn:aws:s3:::*"}})
	if err := m.PutCannedPolicy(ctx, "controller-mine", doc.JSON()); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUser(ctx, "controller-mine", "controller-mine-secret"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUserPolicy(ctx, "controller-mine", "controller-mine"); err != nil {
		t.Fatal(err)
	}
	backend := func(access, secret string) *Backend {
		be, _ := open(t, &Config{Implementation: ImplMinIO, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
			AccessKeyID: access, SecretAccessKey: secret, RequestTimeout: drivers.Duration{Duration: 10 * time.Second}})
		return be
	}

	be := backend("controller-mine", "controller-mine-secret")
	in, err := be.Inspect(ctx, drivers.Resource{Name: "foreign"})
	if err != nil || !in.Exists || !in.HasContent {
		t.Errorf("a bucket the keys may not read: want it to exist with content and no error, got %+v %v", in, err)
	}
	if in, err := be.Inspect(ctx, drivers.Resource{Name: "mine-new"}); err != nil || in.Exists {
		t.Errorf("a free name the keys may create: want no bucket, got %+v %v", in, err)
	}

	bad := backend("controller-mine", "not-the-secret-0123")
	if _, err := bad.Inspect(ctx, drivers.Resource{Name: "foreign"}); !drivers.IsAccessDenied(err) {
		t.Errorf("keys the server refuses: want *drivers.AccessDeniedError, got %T %v", err, err)
	}
}
