package main

import (
	"context"
	"fmt"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
)

// iamPolicyName is the inline policy the s3 driver gives a user it issues
// a key to (drivers/s3, keys through IAM): the one policy and setPolicy
// read and write.
const iamPolicyName = "buckety"

// iamKeys: where keys per access are IAM users (implementation seaweedfs
// or aws), the key commands are what an operator would run with `aws iam`.
// A "key" is named by its user, and its rights are the user's inline
// policy. IAM issues access keys itself: add cannot choose the key or its
// secret, so it prints the ones IAM issued.
type iamKeys struct{ c *iam.Client }

// newIAMKeys signs IAM requests with the server's admin keys. The IAM API
// is iamEndpoint (the Secret's adminEndpoint, as credentials.iamEndpoint
// names it in the driver's config) when set, else AWS's global endpoint on
// aws, else the S3 endpoint (SeaweedFS serves IAM on its S3 port).
func newIAMKeys(impl, endpoint, iamEndpoint, region, accessKey, secretKey string) iamKeys {
	endpoint, region = iamTarget(impl, endpoint, region, iamEndpoint)
	return iamKeys{iam.New(endpoint, region, accessKey, secretKey, nil)}
}

// iamTarget is where IAM requests go and the region they are signed for:
// on aws us-east-1 (IAM is global), elsewhere the server's region.
func iamTarget(impl, endpoint, region, iamEndpoint string) (string, string) {
	if impl == s3driver.ImplAWS {
		if iamEndpoint == "" {
			iamEndpoint = iam.AWSEndpoint
		}
		return iamEndpoint, iam.AWSSigningRegion
	}
	if iamEndpoint == "" {
		iamEndpoint = endpoint
	}
	if region == "" {
		region = "us-east-1"
	}
	return iamEndpoint, region
}

// add makes a user buckety did not make (no path, no tag) with a key, and
// prints the key and secret IAM issued ("KEYID SECRET"); secret is not
// used, IAM chooses.
func (k iamKeys) add(ctx context.Context, name, _ string) error {
	if _, err := k.c.CreateUser(ctx, name, "", nil); err != nil {
		return err
	}
	key, err := k.c.CreateAccessKey(ctx, name)
	if err != nil {
		return err
	}
	if key.AccessKeyID == "" || key.SecretAccessKey == "" {
		return fmt.Errorf("iam CreateAccessKey for %s answered no key or no secret", name)
	}
	fmt.Println(key.AccessKeyID, key.SecretAccessKey)
	return nil
}

// exists reports whether the user exists.
func (k iamKeys) exists(ctx context.Context, name string) (bool, error) {
	_, err := k.c.GetUser(ctx, name)
	if iam.IsNoSuchEntity(err) {
		return false, nil
	}
	return err == nil, err
}

// policy is the user's inline policy buckety.
func (k iamKeys) policy(ctx context.Context, name string) (string, error) {
	p, err := k.c.GetUserPolicy(ctx, name, iamPolicyName)
	return string(p), err
}

// setPolicy replaces the user's inline policy buckety.
func (k iamKeys) setPolicy(ctx context.Context, name, policy string) error {
	return k.c.PutUserPolicy(ctx, name, iamPolicyName, []byte(policy))
}
