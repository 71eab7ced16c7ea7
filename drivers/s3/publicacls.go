package s3

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
)

// Public ACLs on SeaweedFS. An upload that carries an ACL header, even
// X-Amz-Acl: private, needs s3:PutObjectAcl there, and rclone sends that
// header with every upload. With s3:PutObjectAcl alone a key could make
// its objects public-read, served to anonymous readers. So on seaweedfs
// Ensure keeps two fields of the bucket's public access block on:
// BlockPublicAcls (a public grant, on upload or through PutObjectAcl and
// PutBucketAcl, is refused) and IgnorePublicAcls (a public grant stored
// before is not honoured). The other two fields, about bucket policies,
// are kept as they are: a bucket an operator shares through its policy
// stays shared. An issued key gets s3:PutObjectAcl, on a role that may
// upload, only while its bucket blocks and ignores public ACLs: read when
// the key is granted and at every credential sweep, so a block removed
// out of band narrows the keys on that bucket until Ensure sets it again.
// Ensure sets it on the buckets it creates or converges; a bucket adopted
// without converging (Adopt) is left as it is.

// publicACLsBlocked reports whether bucket refuses and ignores public ACLs.
// A bucket without a public access block, a missing bucket, or a server
// that does not implement it, does not.
func (b *Backend) publicACLsBlocked(ctx context.Context, cl *s3.Client, bucket string) (bool, *types.PublicAccessBlockConfiguration, error) {
	out, err := cl.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String(bucket)})
	switch {
	case isCode(err, "NoSuchPublicAccessBlockConfiguration") || isNotImplemented(err) || isNoSuchBucket(err):
		return false, &types.PublicAccessBlockConfiguration{}, nil
	case err != nil:
		return false, nil, b.classify(fmt.Errorf("get the public access block of %s: %w", bucket, err))
	}
	c := out.PublicAccessBlockConfiguration
	if c == nil {
		c = &types.PublicAccessBlockConfiguration{}
	}
	return aws.ToBool(c.BlockPublicAcls) && aws.ToBool(c.IgnorePublicAcls), c, nil
}

// ensurePublicACLsBlocked sets BlockPublicAcls and IgnorePublicAcls on a
// seaweedfs bucket (see the top of this file). The block is not a
// parameter: a dry run neither writes nor lists it, so a Buckety that
// adopts a bucket without converging it (Adopt) reports no difference and
// leaves the bucket as it is; its keys then get no s3:PutObjectAcl.
func (b *Backend) ensurePublicACLsBlocked(ctx context.Context, cl *s3.Client, bucket string, g *writeGate, res *drivers.EnsureResult) error {
	if !b.srv.blocksPublicACLs || g.dryRun {
		return nil
	}
	ok, cur, err := b.publicACLsBlocked(ctx, cl, bucket)
	if err != nil || ok {
		return err
	}
	const change = "block and ignore public ACLs (public access block: BlockPublicAcls, IgnorePublicAcls)"
	if err := g.open(ctx); err != nil {
		return err
	}
	want := &types.PublicAccessBlockConfiguration{
		BlockPublicAcls: aws.Bool(true), IgnorePublicAcls: aws.Bool(true),
		BlockPublicPolicy: aws.Bool(aws.ToBool(cur.BlockPublicPolicy)), RestrictPublicBuckets: aws.Bool(aws.ToBool(cur.RestrictPublicBuckets)),
	}
	if _, err := cl.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String(bucket), PublicAccessBlockConfiguration: want}); err != nil {
		return b.classify(fmt.Errorf("block public ACLs on %s: %w", bucket, err))
	}
	res.Changes = append(res.Changes, change)
	return nil
}

// aclHeadersAllowed reports whether the keys issued on bucket may send ACL
// headers (s3:PutObjectAcl): on seaweedfs, while the bucket blocks and
// ignores public ACLs; never elsewhere (on aws an ACL granted to another
// account's canonical ID is honoured whatever the block says).
func (b *Backend) aclHeadersAllowed(ctx context.Context, bucket string) (bool, error) {
	if !b.srv.blocksPublicACLs {
		return false, nil
	}
	cl, err := b.client(b.cfg.Endpoint)
	if err != nil {
		return false, err
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	ok, _, err := b.publicACLsBlocked(ctx, cl, bucket)
	return ok, err
}
