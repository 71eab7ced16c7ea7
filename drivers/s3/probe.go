package s3

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Probe implements drivers.Prober: one ListBuckets of at most one bucket
// on the backend's endpoint, which the drift sweep needs the keys to allow
// anyway (keysWork), within the backend's request timeout. It is sent once,
// without the SDK's retries: a refused connection is an answer to a probe,
// reported at once rather than after the retries' backoff.
func (b *Backend) Probe(ctx context.Context) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	cl, err := b.client(b.cfg.endpoint())
	if err != nil {
		return err
	}
	once := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	if _, err := cl.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(1)}, once); err != nil {
		return b.classify(err)
	}
	return nil
}

// Implementation implements drivers.Implementer: the config's
// implementation discriminator.
func (b *Backend) Implementation() string { return b.cfg.Implementation }
