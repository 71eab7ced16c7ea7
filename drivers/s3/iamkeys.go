package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
)

// Keys per access through the AWS IAM API (implementation aws or
// seaweedfs, with credentials set): an IAM user per access credential,
// named like the other implementations' keys (bky<hash>-<serial>, under
// the path /buckety/ and tagged with the access's UID where the server
// keeps them), holding one inline policy, buckety, with its role's actions
// on its bucket, and one access key. IAM issues the key and its secret:
// the Secret's accessKeyID is that key, not the user
// (drivers.IssuedSecrets), and Grant checks it against the user's keys
// whenever it asserts.
//
// A grant is, in order: the user (created when missing), its policy (an
// upsert), then its key: the Secret's key when the user has it, else a new
// one, every other key of the user deleted first (one left by a grant that
// stopped before its Secret was written, or made out of band). Revocation
// deletes the keys first, so a revocation that stops half way leaves
// nothing usable, then the policy, then the user.

// IAMPath is the path of the users buckety makes.
const IAMPath = "/buckety/"

// iamPolicyName is the inline policy of a minted user.
const iamPolicyName = "buckety"

// iamTagAccess is the tag naming the access a user was made for.
const iamTagAccess = "buckety.yolean.se/access-uid"

var _ drivers.IssuedSecrets = (*Backend)(nil)

// usesIAM reports an implementation whose keys per access are IAM users.
func usesIAM(impl string) bool { return impl == ImplAWS || impl == ImplSeaweedFS }

// iamEndpoint is the IAM API URL: credentials.iamEndpoint, else AWS's
// global endpoint on aws, else the S3 endpoint (SeaweedFS serves IAM on
// its S3 port).
func (c *Config) iamEndpoint() string {
	switch {
	case c.Credentials != nil && c.Credentials.IAMEndpoint != "":
		return c.Credentials.IAMEndpoint
	case c.Implementation == ImplAWS:
		return iam.AWSEndpoint
	}
	return c.Endpoint
}

// iamRegion is the region IAM requests are signed for.
func (c *Config) iamRegion() string {
	if c.Implementation == ImplAWS {
		return iam.AWSSigningRegion
	}
	return c.signingRegion()
}

// SecretFrom implements drivers.IssuedSecrets: on an IAM backend, the
// Secret's key and secret as one value, key:secret. Other
// implementations take the secret buckety minted, keyed by the principal.
func (b *Backend) SecretFrom(principal string, data map[string][]byte) string {
	if !usesIAM(b.cfg.Implementation) {
		return drivers.KeyedSecret(b, principal, data)
	}
	id, secret := string(data[SecretAccessKeyID]), string(data[SecretSecretAccessKey])
	if id == "" || secret == "" {
		return ""
	}
	return id + ":" + secret
}

// splitIssued splits a key:secret value; ok false when it is not one.
func splitIssued(s string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(s, ":")
	return id, secret, ok && id != "" && secret != ""
}

// iamAccessPolicy is the inline policy of a role's key on bucket.
func iamAccessPolicy(bucket string, role drivers.Role) ([]byte, error) {
	acts, ok := actionsOf[role]
	if !ok {
		return nil, fmt.Errorf("role %q has no actions", role)
	}
	return iam.BucketPolicy(bucket, acts.Bucket, acts.Object).JSON(), nil
}

// iamError classifies an IAM failure like the admin APIs' (adminError).
func (b *Backend) iamError(what string, err error) error {
	err = fmt.Errorf("s3 iam: %s: %w", what, err)
	var ie *iam.Error
	if !errors.As(err, &ie) {
		return b.classify(err)
	}
	switch {
	case iam.IsAccessDenied(err) || ie.Status == http.StatusForbidden:
		return &drivers.AccessDeniedError{Backend: b.name, Err: err}
	case ie.Status >= 500 || ie.Code == iam.CodeThrottling:
		return &drivers.UnavailableError{Backend: b.name, Err: err}
	}
	return err
}

// scopingIAM asks IAM for buckety's users: an answer means users can be
// made with these keys.
func (b *Backend) scopingIAM(ctx context.Context) error {
	if _, err := b.scoped.iam.ListUsers(ctx, IAMPath); err != nil {
		return b.iamError("list users", err)
	}
	return nil
}

// inspectIAM reports whether the user principal exists.
func (b *Backend) inspectIAM(ctx context.Context, principal string) (bool, error) {
	_, err := b.scoped.iam.GetUser(ctx, principal)
	switch {
	case iam.IsNoSuchEntity(err):
		return false, nil
	case err != nil:
		return false, b.iamError("get user "+principal, err)
	}
	return true, nil
}

// grantIAM makes the access's user, its policy and its key, and returns
// the key and secret: issued (a key:secret value in secret is kept when
// the user still has that key).
func (b *Backend) grantIAM(ctx context.Context, a drivers.Access, secret string) (string, string, error) {
	c := b.scoped.iam
	policy, err := iamAccessPolicy(a.Resource, roleOf(a))
	if err != nil {
		return "", "", err
	}
	tags := []iam.Tag{{Key: iamTagAccess, Value: a.UID}}
	if a.Recorded {
		// Recorded in this very pass, after it was seen absent: one that
		// exists now was made by someone else.
		if _, err := c.CreateUser(ctx, a.Principal, IAMPath, tags); iam.IsEntityAlreadyExists(err) {
			return "", "", &drivers.PrincipalExistsError{Backend: b.name, Principal: a.Principal}
		} else if err != nil {
			return "", "", b.iamError("create user "+a.Principal, err)
		}
	} else if _, err := c.GetUser(ctx, a.Principal); iam.IsNoSuchEntity(err) {
		if _, err := c.CreateUser(ctx, a.Principal, IAMPath, tags); err != nil && !iam.IsEntityAlreadyExists(err) {
			return "", "", b.iamError("create user "+a.Principal, err)
		}
	} else if err != nil {
		return "", "", b.iamError("get user "+a.Principal, err)
	}
	if err := c.PutUserPolicy(ctx, a.Principal, iamPolicyName, policy); err != nil {
		return "", "", b.iamError("put the policy of "+a.Principal, err)
	}
	names, err := c.ListUserPolicies(ctx, a.Principal)
	if err != nil {
		return "", "", b.iamError("list the policies of "+a.Principal, err)
	}
	for _, n := range names {
		// buckety's user holds its own policy only: one added out of
		// band would widen the key past its role.
		if n != iamPolicyName {
			if err := c.DeleteUserPolicy(ctx, a.Principal, n); err != nil && !iam.IsNoSuchEntity(err) {
				return "", "", b.iamError("delete policy "+n+" of "+a.Principal, err)
			}
		}
	}
	keys, err := c.ListAccessKeys(ctx, a.Principal)
	if err != nil {
		return "", "", b.iamError("list the keys of "+a.Principal, err)
	}
	id, sec, ok := splitIssued(secret)
	keep := ok && slices.ContainsFunc(keys, func(k iam.AccessKeyMetadata) bool { return k.AccessKeyID == id })
	for _, k := range keys {
		if keep && k.AccessKeyID == id {
			continue
		}
		// A key no Secret holds: left by a grant that stopped before
		// its Secret was written, or made out of band. IAM holds two
		// keys at most: it goes before a new one is made.
		if err := c.DeleteAccessKey(ctx, a.Principal, k.AccessKeyID); err != nil && !iam.IsNoSuchEntity(err) {
			return "", "", b.iamError("delete key "+k.AccessKeyID+" of "+a.Principal, err)
		}
	}
	if keep {
		return id, sec, nil
	}
	k, err := c.CreateAccessKey(ctx, a.Principal)
	if err != nil {
		return "", "", b.iamError("create a key for "+a.Principal, err)
	}
	return k.AccessKeyID, k.SecretAccessKey, nil
}

// revokeIAM deletes the user's keys, its policies, then the user. A user
// already gone is success.
func (b *Backend) revokeIAM(ctx context.Context, principal string) error {
	if err := b.scoped.iam.DeleteUserAndKeys(ctx, principal); err != nil {
		return b.iamError("delete user "+principal, err)
	}
	return nil
}

// sweepIAM judges each access's user: missing, without a key, holding a
// policy but buckety's, or buckety's edited, drifted. One ListUsers for
// the backend, then ListAccessKeys and ListUserPolicies per user and
// GetUserPolicy: IAM has no bulk read that every server serves.
func (b *Backend) sweepIAM(ctx context.Context, as []drivers.Access) ([]int, error) {
	c := b.scoped.iam
	users, err := c.ListUsers(ctx, IAMPath)
	if err != nil {
		return nil, b.iamError("list users", err)
	}
	exists := map[string]bool{}
	for _, u := range users {
		exists[u.UserName] = true
	}
	var drifted []int
	var skipped []error
	for i, a := range as {
		if !exists[a.Principal] {
			drifted = append(drifted, i)
			continue
		}
		ok, err := b.iamUserHolds(ctx, a)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", a.Principal, err))
			continue
		}
		if !ok {
			drifted = append(drifted, i)
		}
	}
	return drifted, errors.Join(skipped...)
}

// iamUserHolds reports whether a's user has a key, and exactly buckety's
// policy with its role's actions on its bucket.
func (b *Backend) iamUserHolds(ctx context.Context, a drivers.Access) (bool, error) {
	c := b.scoped.iam
	keys, err := c.ListAccessKeys(ctx, a.Principal)
	if err != nil {
		return false, b.iamError("list the keys of "+a.Principal, err)
	}
	if len(keys) == 0 {
		return false, nil
	}
	names, err := c.ListUserPolicies(ctx, a.Principal)
	if err != nil {
		return false, b.iamError("list the policies of "+a.Principal, err)
	}
	if !slices.Equal(names, []string{iamPolicyName}) {
		return false, nil
	}
	got, err := c.GetUserPolicy(ctx, a.Principal, iamPolicyName)
	if iam.IsNoSuchEntity(err) {
		return false, nil
	}
	if err != nil {
		return false, b.iamError("get the policy of "+a.Principal, err)
	}
	want, err := iamAccessPolicy(a.Resource, roleOf(a))
	if err != nil {
		return false, err
	}
	// Servers store a one-item list as a string (SeaweedFS does):
	// compared as policies, not as text.
	return samePolicy(string(got), string(want)), nil
}

// mintedIAMUsers lists the users buckety made (path /buckety/ where the
// server keeps paths; every bky user where it does not).
func (b *Backend) mintedIAMUsers(ctx context.Context) (map[string]bool, error) {
	users, err := b.scoped.iam.ListUsers(ctx, IAMPath)
	if err != nil {
		return nil, b.iamError("list users", err)
	}
	out := map[string]bool{}
	for _, u := range users {
		if strings.HasPrefix(u.UserName, "bky") {
			out[u.UserName] = true
		}
	}
	return out, nil
}
