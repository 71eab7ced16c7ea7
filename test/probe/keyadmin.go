package main

import (
	"context"
	"errors"
	"fmt"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
)

// keyAdmin acts on a server's keys as its operator would with mc or the
// gateway's CLI, out of buckety's hands: buckety's own paths never do
// this. The e2e scenarios use it to make a key buckety did not issue, and
// to edit an issued key's policy out of band.
type keyAdmin interface {
	// add makes a key with this name and secret that buckety did not
	// issue, and prints what a client signs with.
	add(ctx context.Context, name, secret string) error
	exists(ctx context.Context, name string) (bool, error)
	// policy and setPolicy read and replace the policy of a key buckety
	// issued.
	policy(ctx context.Context, name string) (string, error)
	setPolicy(ctx context.Context, name, policy string) error
}

// newKeyAdmin is the key admin of an implementation, signing with the
// server's admin keys.
func newKeyAdmin(impl, endpoint, adminEndpoint, region, accessKey, secretKey string) (keyAdmin, error) {
	switch impl {
	case s3driver.ImplMinIO:
		return minioKeys{minioadmin.New(endpoint, region, accessKey, secretKey, nil)}, nil
	case s3driver.ImplVersityGW:
		if adminEndpoint == "" {
			adminEndpoint = endpoint
		}
		return versityKeys{versityadmin.New(adminEndpoint, region, accessKey, secretKey, nil), endpoint, region}, nil
	case s3driver.ImplSeaweedFS, s3driver.ImplAWS:
		return newIAMKeys(impl, endpoint, adminEndpoint, region, accessKey, secretKey), nil
	}
	return nil, fmt.Errorf("s3-admin: no key commands for implementation %q", impl)
}

// foreignKeyPolicy is the inline policy of a key minioKeys.add makes:
// listing buckets and nothing else, so the key is known to the server (a
// request with it is refused authorization, not authentication) and
// reaches no bucket.
const foreignKeyPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ListAllMyBuckets"],"Resource":["arn:aws:s3:::*"]}]}`

// minioKeys: a key buckety did not issue is a service account of the
// root user; an issued key's policy is its user's canned policy.
type minioKeys struct{ m *minioadmin.Client }

func (k minioKeys) add(ctx context.Context, name, secret string) error {
	// A service account's key is at most 20 characters; a name buckety
	// marks with its installation is longer, and is made a user of its
	// own with no policy (known to the server, reaching no bucket).
	add := func() error {
		return k.m.Add(ctx, "", name, secret, []byte(foreignKeyPolicy), "", "created out of band")
	}
	if minioadmin.ValidKey(name) != nil {
		add = func() error { return k.m.SetUser(ctx, name, secret) }
	}
	if err := add(); err != nil {
		return err
	}
	fmt.Println(name, secret)
	return nil
}

func (k minioKeys) exists(ctx context.Context, name string) (bool, error) {
	return k.m.KeyTaken(ctx, name)
}

func (k minioKeys) policy(ctx context.Context, name string) (string, error) {
	p, found, err := k.m.CannedPolicy(ctx, s3driver.MinIOPolicyName(name))
	if err == nil && !found {
		err = fmt.Errorf("no policy %s", s3driver.MinIOPolicyName(name))
	}
	return p, err
}

func (k minioKeys) setPolicy(ctx context.Context, name, policy string) error {
	return k.m.PutCannedPolicy(ctx, s3driver.MinIOPolicyName(name), []byte(policy))
}

// versityKeys: a key buckety did not issue is a user with role user and
// no bucket policy naming it; keys have no policies of their own.
type versityKeys struct {
	v                *versityadmin.Client
	endpoint, region string
}

func (k versityKeys) add(ctx context.Context, name, secret string) error {
	if err := k.v.CreateUser(ctx, name, secret); err != nil {
		return err
	}
	fmt.Println(name, secret)
	return nil
}

func (k versityKeys) exists(ctx context.Context, name string) (bool, error) {
	return versityadmin.KeyKnown(ctx, k.endpoint, k.region, name, nil)
}

var errNoKeyPolicies = errors.New("s3-admin: VersityGW keys have no policies of their own: their rights are bucket-policy statements")

func (versityKeys) policy(context.Context, string) (string, error)  { return "", errNoKeyPolicies }
func (versityKeys) setPolicy(context.Context, string, string) error { return errNoKeyPolicies }
