package s3

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// bucketPolicy reads a bucket's policy; none is nil.
func (b *Backend) bucketPolicy(ctx context.Context, cl *s3.Client, bucket string) ([]byte, error) {
	out, err := cl.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	switch {
	case isCode(err, "NoSuchBucketPolicy"):
		return nil, nil
	case err != nil:
		return nil, b.classify(fmt.Errorf("get the policy of bucket %s: %w", bucket, err))
	}
	return []byte(aws.ToString(out.Policy)), nil
}

// putBucketPolicy writes a bucket's policy; an empty one deletes it.
func (b *Backend) putBucketPolicy(ctx context.Context, cl *s3.Client, bucket string, policy []byte) error {
	var err error
	if len(strings.TrimSpace(string(policy))) == 0 {
		_, err = cl.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
	} else {
		_, err = cl.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(string(policy))})
	}
	if err != nil {
		return b.classify(fmt.Errorf("write the policy of bucket %s: %w", bucket, err))
	}
	return nil
}

// isNoSuchBucket reports a bucket that is gone.
func isNoSuchBucket(err error) bool { return isCode(err, "NoSuchBucket", "NotFound") }
