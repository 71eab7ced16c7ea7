package s3

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// loseCreateReply loses the answer to the first CreateBucket once armed:
// the request reaches the server, which creates the bucket, and the
// client sees a reset connection instead of the answer, as when a
// network drops a reply. It sits next to the transport, under the SDK's
// retries, as the network does.
func loseCreateReply(armed *atomic.Bool, lost *atomic.Int32) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("bucketyTestLoseReply",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleDeserialize(ctx, in)
				if err != nil || middleware.GetOperationName(ctx) != "CreateBucket" || !armed.CompareAndSwap(true, false) {
					return out, md, err
				}
				if resp, ok := out.RawResponse.(*smithyhttp.Response); ok {
					if cerr := resp.Body.Close(); cerr != nil {
						return out, md, cerr
					}
				}
				lost.Add(1)
				return middleware.DeserializeOutput{}, md, &smithyhttp.RequestSendError{Err: fmt.Errorf("read tcp: %w", syscall.ECONNRESET)}
			}), middleware.After)
	}
}

// TestLostCreateReplyIsNotSomeoneElsesBucket: the first create of a bucket
// (a claim just recorded, create only) whose answer the network loses
// after the server created it. Sent again, the create would be answered
// BucketAlreadyOwnedByYou and read as a bucket someone else made since the
// adoption check, which the controller hands to adoption: its own new
// bucket refused or adopted (and so kept on delete). The create is sent
// once, its error says the outcome is unknown (unavailable), and the next
// pass converges the bucket the server has.
func TestLostCreateReplyIsNotSomeoneElsesBucket(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv := s3test.Start(t, impl, s3test.Options{})
			cfg := &Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
				AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second}}
			var armed atomic.Bool
			var lost atomic.Int32
			be, err := (&Driver{APIOptions: []func(*middleware.Stack) error{loseCreateReply(&armed, &lost)}}).Open(context.Background(), "s3", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			drivertest.LostCreateSettles(t, be, drivers.Resource{Name: "lost-reply", Parameters: map[string]string{ParamVersioning: "true"}},
				func() { armed.Store(true) }, func() int { return int(lost.Load()) })
			ctx := context.Background()
			raw := rawClient(t, cfg, cfg.Endpoint)
			v, err := raw.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("lost-reply")})
			if err != nil || v.Status != "Enabled" {
				t.Errorf("the bucket after the next pass: want versioning Enabled, got %+v %v", v, err)
			}
		})
	}
}
