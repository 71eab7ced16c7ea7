package scale

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// bucketVersioning reads a bucket's versioning status from MinIO with the
// root credentials.
func (e *env) bucketVersioning(ctx context.Context, bucket string) (string, error) {
	c := s3.New(s3.Options{Region: e.s3.Region, BaseEndpoint: aws.String(e.s3.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(e.s3.AccessKey, e.s3.SecretKey, "")})
	out, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		return "", fmt.Errorf("bucket %s: %w", bucket, err)
	}
	return string(out.Status), nil
}
