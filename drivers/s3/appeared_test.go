package s3

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// TestBucketAppearingBeforeTheCreateIsNotWritten: a bucket another
// installation creates between this Ensure's existence check and its
// create (played here by a HeadBucket answered "not found" for a bucket
// that exists). The create, sent once, is answered that the bucket exists;
// Ensure must fail without writing to it: its owner record, which the
// other installation may not have written yet, is read at the next pass
// before anything is converged. It used to converge the bucket at once,
// writing this Buckety's versioning to the other's bucket.
func TestBucketAppearingBeforeTheCreateIsNotWritten(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv := s3test.Start(t, impl, s3test.Options{})
			cfg := &Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
				AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second}}
			ctx := context.Background()
			raw := rawClient(t, cfg, cfg.Endpoint)
			if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("appeared")}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var ops []string
			hidden := func(stack *middleware.Stack) error {
				return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("bucketyTestAppeared",
					func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
						op := middleware.GetOperationName(ctx)
						mu.Lock()
						ops = append(ops, op)
						mu.Unlock()
						if op == "HeadBucket" {
							return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.GenericAPIError{Code: "NotFound", Message: "hidden by the test"}
						}
						return next.HandleInitialize(ctx, in)
					}), middleware.Before)
			}
			be, err := (&Driver{APIOptions: []func(*middleware.Stack) error{hidden}}).Open(ctx, "s3", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			res, err := be.Ensure(ctx, drivers.Resource{Name: "appeared", Parameters: map[string]string{ParamVersioning: "true"}})
			if err == nil {
				t.Errorf("want an error for a bucket that appeared before the create, got %+v", res)
			}
			if res.Created {
				t.Error("want the bucket not reported created")
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Contains(ops, "CreateBucket") {
				t.Fatalf("the test did not reach the create: %v", ops)
			}
			for _, op := range ops {
				if op != "HeadBucket" && op != "CreateBucket" {
					t.Errorf("want nothing but the existence check and the create sent, got %v", ops)
					break
				}
			}
			v, err := raw.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("appeared")})
			if err != nil || v.Status == "Enabled" {
				t.Errorf("the other's bucket: want its versioning untouched, got %+v %v", v, err)
			}
		})
	}
}
