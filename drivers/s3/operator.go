package s3

import (
	"context"
	"errors"
	"fmt"
)

// The methods of this file act on the server as its operator would with
// mc or the gateway's CLI, out of buckety's hands: buckety's own paths never
// call them. buckety's probe uses them in the e2e scenarios to make a key
// buckety did not mint, and to edit a minted key's policy out of band.

// foreignKeyPolicy is the inline policy of a key AddForeignKey makes on
// MinIO: listing buckets and nothing else, so the key is known to the server
// (a request with it is refused authorization, not authentication) and
// reaches no bucket.
const foreignKeyPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ListAllMyBuckets"],"Resource":["arn:aws:s3:::*"]}]}`

// AddForeignKey creates a key with this access key and secret that buckety
// did not mint: on MinIO a service account of the root user whose inline
// policy only lists buckets, on VersityGW a user with role user and no
// bucket policy naming it.
func (b *Backend) AddForeignKey(ctx context.Context, access, secret string) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	switch {
	case b.scoped.minio != nil:
		return b.scoped.minio.add(ctx, "", access, secret, []byte(foreignKeyPolicy), "", "created out of band")
	case b.scoped.versity != nil:
		return b.scoped.versity.createUser(ctx, access, secret)
	}
	return b.noAdmin()
}

// KeyPolicy returns the policy of a key buckety minted on MinIO (its
// user's own canned policy).
func (b *Backend) KeyPolicy(ctx context.Context, access string) (string, error) {
	if b.scoped.minio == nil {
		return "", b.noKeyPolicies()
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	p, found, err := b.scoped.minio.cannedPolicy(ctx, minioPolicyName(access))
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("s3: backend %s: no policy %s", b.name, minioPolicyName(access))
	}
	return p, nil
}

// SetKeyPolicy replaces the policy of a key buckety minted on MinIO, as an
// operator editing it with mc admin policy create would.
func (b *Backend) SetKeyPolicy(ctx context.Context, access, policy string) error {
	if b.scoped.minio == nil {
		return b.noKeyPolicies()
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	return b.scoped.minio.putCannedPolicy(ctx, minioPolicyName(access), []byte(policy))
}

func (b *Backend) noKeyPolicies() error {
	if b.scoped.versity != nil {
		return errors.New("s3: VersityGW keys have no policies of their own: their rights are bucket-policy statements")
	}
	return b.noAdmin()
}
