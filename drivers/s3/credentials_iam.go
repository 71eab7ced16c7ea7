package s3

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
)

// The IAM issuer (implementation aws or seaweedfs, with credentials
// set): an IAM user per access credential,
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
// stopped before its Secret was written, or made out of band). A user the
// grant itself created is not read back: a first issue is three requests
// (CreateUser, PutUserPolicy, CreateAccessKey), for SeaweedFS answers
// each IAM request, a read as well, under one lock after loading every
// user it has (so its IAM costs in requests times users). Revocation
// deletes the keys first, so a revocation that stops half way leaves
// nothing usable, then the policy, then the user.

// IAMPath is the path of the users buckety makes.
const IAMPath = "/buckety/"

// iamPolicyName is the inline policy of an issued user.
const iamPolicyName = "buckety"

// iamTagAccess is the tag naming the access a user was made for.
const iamTagAccess = "buckety.yolean.se/access-uid"

// iamEndpoint is the IAM API URL: credentials.iamEndpoint, else AWS's
// global endpoint on aws, else the S3 endpoint (SeaweedFS serves IAM on
// its S3 port).
func (b *Backend) iamEndpoint() string {
	switch {
	case b.cfg.Credentials != nil && b.cfg.Credentials.IAMEndpoint != "":
		return b.cfg.Credentials.IAMEndpoint
	case b.srv.iamEndpoint != "":
		return b.srv.iamEndpoint
	}
	return b.cfg.Endpoint
}

// iamRegion is the region IAM requests are signed for.
func (b *Backend) iamRegion() string {
	if r := b.srv.iamRegion; r != "" {
		return r
	}
	return b.cfg.signingRegion()
}

// iamIssuer issues IAM users.
type iamIssuer struct {
	b   *Backend
	iam *iam.Client
	// mu guards swept.
	mu sync.Mutex
	// swept is the last principal a sweep read in full: the next sweep's
	// turn starts after it (sweepTurn).
	swept string
}

// iamAccessPolicy is the inline policy of a role's key on bucket; with
// aclHeaders a role that uploads may also send ACL headers
// (s3:PutObjectAcl, see publicacls.go).
func iamAccessPolicy(bucket string, role drivers.Role, aclHeaders bool) ([]byte, error) {
	return iamBucketsPolicy([]string{bucket}, role, func(string) bool { return aclHeaders })
}

// iamBucketsPolicy is the inline policy of a role's key on buckets: the
// bucket-level actions on every one, the object-level ones on their
// objects, with s3:PutObjectAcl on the objects of the buckets aclHeaders
// allows it on, for a role that uploads.
func iamBucketsPolicy(buckets []string, role drivers.Role, aclHeaders func(bucket string) bool) ([]byte, error) {
	acts, ok := actionsOf[role]
	if !ok {
		return nil, fmt.Errorf("role %q has no actions", role)
	}
	if err := plainBuckets(buckets); err != nil {
		return nil, err
	}
	var plain, acl []string
	for _, b := range buckets {
		if uploads(acts) && aclHeaders(b) {
			acl = append(acl, b)
		} else {
			plain = append(plain, b)
		}
	}
	doc := policy.ForBuckets(buckets, acts.Bucket, nil)
	if len(plain) > 0 {
		doc.Statement = append(doc.Statement, policy.ForBuckets(plain, nil, acts.Object).Statement...)
	}
	if len(acl) > 0 {
		object := append(slices.Clip(acts.Object), "s3:PutObjectAcl")
		doc.Statement = append(doc.Statement, policy.ForBuckets(acl, nil, object).Statement...)
	}
	return doc.JSON(), nil
}

// uploads reports whether a role's actions include uploading.
func uploads(acts roleActions) bool { return slices.Contains(acts.Object, "s3:PutObject") }

// accessPolicy is a's inline policy, as its buckets stand now. blocked
// remembers, for one sweep, what each bucket's public access block said
// (nil: read it). A role that does not upload needs no read.
func (i *iamIssuer) accessPolicy(ctx context.Context, a drivers.Access, blocked map[string]bool) ([]byte, error) {
	role := roleOf(a)
	buckets := a.Resources()
	acl := map[string]bool{}
	if acts, ok := actionsOf[role]; ok && uploads(acts) {
		for _, bucket := range buckets {
			allowed, seen := blocked[bucket]
			if !seen {
				var err error
				if allowed, err = i.b.aclHeadersAllowed(ctx, bucket); err != nil {
					return nil, err
				}
				if blocked != nil {
					blocked[bucket] = allowed
				}
			}
			acl[bucket] = allowed
		}
	}
	return iamBucketsPolicy(buckets, role, func(b string) bool { return acl[b] })
}

// ready asks IAM for buckety's users: an answer means users can be made
// with these keys.
func (i *iamIssuer) ready(ctx context.Context) (string, error) {
	if _, err := i.iam.ListUsers(ctx, IAMPath); err != nil {
		return "", i.b.adminError("list users", err)
	}
	return "", nil
}

// inspectIAM reports whether the user principal exists.
func (i *iamIssuer) inspect(ctx context.Context, principal string) (bool, error) {
	_, err := i.iam.GetUser(ctx, principal)
	switch {
	case iam.IsNoSuchEntity(err):
		return false, nil
	case err != nil:
		return false, i.b.adminError("get user "+principal, err)
	}
	return true, nil
}

// grant makes the access's user, its policy and its key, and returns the
// key and secret the server issued (an issuedSecret value in secret is
// kept when the user still has that key).
func (i *iamIssuer) grant(ctx context.Context, a drivers.Access, secret string) (string, error) {
	id, sec, err := i.grantKey(ctx, a, secret)
	if err != nil {
		return "", err
	}
	return issuedSecret(id, sec), nil
}

// grantKey asserts the access's user, its policy and its key. What it
// reads first depends on what the user can hold: one this call created (a
// first issue, or one deleted out of band) holds nothing yet, so it gets
// its policy and a key and nothing is listed (three requests); one being
// issued (IssueNew, after an interrupted attempt) holds no policy but
// buckety's, so only its keys are listed (the attempt may have made one
// whose secret no Secret holds); a re-assertion reads both. Each step is
// an upsert or a create that IAM refuses to repeat, so a process that
// stops between two of them converges on the next pass: the record is
// still Minting (IssueNew), or the Secret lacks the key (Reassert).
func (i *iamIssuer) grantKey(ctx context.Context, a drivers.Access, secret string) (string, string, error) {
	b := i.b
	policy, err := i.accessPolicy(ctx, a, nil)
	if err != nil {
		return "", "", err
	}
	if err := b.fitUserPolicy(a, policy); err != nil {
		return "", "", err
	}
	created, err := i.ensureUser(ctx, a)
	if err != nil {
		return "", "", err
	}
	if err := i.iam.PutUserPolicy(ctx, a.Principal, iamPolicyName, policy); err != nil {
		return "", "", b.adminError("put the policy of "+a.Principal, err)
	}
	if !created && !a.IsNew() {
		if err := i.onlyBucketyPolicy(ctx, a.Principal); err != nil {
			return "", "", err
		}
	}
	if !created {
		id, sec, keep, err := i.keepOneKey(ctx, a.Principal, secret)
		if err != nil || keep {
			return id, sec, err
		}
	}
	// The key buckety made for a new principal (NewSecret) goes to the
	// user it was made for, and only when this call made the user: a key
	// deleted out of band (revoked by someone) is never made again, a new
	// one is issued.
	var givenID, given string
	if id, sec, ok := splitIssued(secret); ok && created && a.IsNew() && b.srv.callerKeys {
		givenID, given = id, sec
	}
	k, err := i.iam.CreateGivenAccessKey(ctx, a.Principal, givenID, given)
	if err != nil {
		return "", "", b.adminError("create a key for "+a.Principal, err)
	}
	return k.AccessKeyID, k.SecretAccessKey, nil
}

// callerKeyAlphabet is what the key ids buckety makes are made of: AWS's
// and SeaweedFS's own keys' characters.
const callerKeyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newCallerKey is a key id and secret for a server that takes the
// caller's (callerKeys), as one issued value: AKIA and 16 characters from
// crypto/rand, the shape of the server's own, and newSecret's secret.
func newCallerKey() (string, error) {
	id, err := randomFrom(callerKeyAlphabet, 16)
	if err != nil {
		return "", err
	}
	sec, err := newSecret()
	if err != nil {
		return "", err
	}
	return issuedSecret("AKIA"+id, sec), nil
}

// ensureUser creates the access's user, and reports whether this call
// did. When the controller recorded the principal in this very pass,
// after it saw it absent, one that exists now was made by someone else
// (a *drivers.PrincipalExistsError); otherwise a user that exists is
// buckety's, made by an earlier pass: one CreateUser either way, which
// IAM answers EntityAlreadyExists rather than overwrite.
func (i *iamIssuer) ensureUser(ctx context.Context, a drivers.Access) (bool, error) {
	b := i.b
	tags := []iam.Tag{{Key: iamTagAccess, Value: a.UID}}
	_, err := i.iam.CreateUser(ctx, a.Principal, IAMPath, tags)
	switch {
	case err == nil:
		return true, nil
	case iam.IsEntityAlreadyExists(err) && a.JustRecorded():
		return false, &drivers.PrincipalExistsError{Backend: b.name, Principal: a.Principal}
	case iam.IsEntityAlreadyExists(err):
		return false, nil
	}
	return false, b.adminError("create user "+a.Principal, err)
}

// onlyBucketyPolicy deletes every inline policy of user but buckety's:
// buckety's user holds its own policy only, and one added out of band
// would widen the key past its role.
func (i *iamIssuer) onlyBucketyPolicy(ctx context.Context, user string) error {
	b, c := i.b, i.iam
	names, err := c.ListUserPolicies(ctx, user)
	if err != nil {
		return b.adminError("list the policies of "+user, err)
	}
	for _, n := range names {
		if n != iamPolicyName {
			if err := c.DeleteUserPolicy(ctx, user, n); err != nil && !iam.IsNoSuchEntity(err) {
				return b.adminError("delete policy "+n+" of "+user, err)
			}
		}
	}
	return nil
}

// keepOneKey deletes every key of user but the one secret (an
// issuedSecret value) names, and reports whether user still has that one
// (keep), with its id and secret.
func (i *iamIssuer) keepOneKey(ctx context.Context, user, secret string) (string, string, bool, error) {
	b, c := i.b, i.iam
	keys, err := c.ListAccessKeys(ctx, user)
	if err != nil {
		return "", "", false, b.adminError("list the keys of "+user, err)
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
		if err := c.DeleteAccessKey(ctx, user, k.AccessKeyID); err != nil && !iam.IsNoSuchEntity(err) {
			return "", "", false, b.adminError("delete key "+k.AccessKeyID+" of "+user, err)
		}
	}
	if !keep {
		return "", "", false, nil
	}
	return id, sec, true, nil
}

// requests: a grant reads each bucket's public access block (a role that
// uploads, on seaweedfs), then CreateUser, PutUserPolicy,
// ListUserPolicies, ListAccessKeys, a delete of each key but one (IAM
// holds two) and CreateAccessKey, with room for a policy added out of
// band to be deleted; a revocation lists and deletes the keys and
// policies, then deletes the user.
func (i *iamIssuer) requests(a drivers.Access) int {
	return 10 + len(a.Resources())
}

// revoke deletes the user's keys, its policies, then the user. A user
// already gone is success.
func (i *iamIssuer) revoke(ctx context.Context, a drivers.Access) error {
	if err := i.iam.DeleteUserAndKeys(ctx, a.Principal); err != nil {
		return i.b.adminError("delete user "+a.Principal, err)
	}
	return nil
}

// sweep judges each access's user: missing, without a key, holding a
// policy but buckety's, or buckety's edited, drifted. One ListUsers for
// the backend finds every missing user; then ListAccessKeys,
// ListUserPolicies and GetUserPolicy per user, for at most sweepUsers
// users a sweep (sweepTurn): IAM has no bulk read that every server
// serves, AWS throttles an account's IAM calls as a whole, and SeaweedFS
// answers each under one lock after loading every user, so a sweep of a
// thousand users read in full would hold that lock for minutes, every
// interval, with the grants waiting behind it. One user that cannot be
// judged does not keep the others from being judged, but a server that
// stops answering (drivers.IsUnavailable: each request waited out to its
// requestTimeout) ends the sweep there: the rest would each wait as long,
// and the next sweep starts at the user it stopped at.
func (i *iamIssuer) sweep(ctx context.Context, as []drivers.Access) ([]int, error) {
	b, c := i.b, i.iam
	users, err := c.ListUsers(ctx, IAMPath)
	if err != nil {
		return nil, b.adminError("list users", err)
	}
	exists := map[string]bool{}
	for _, u := range users {
		exists[u.UserName] = true
	}
	var drifted, present []int
	for n, a := range as {
		if !exists[a.Principal] {
			drifted = append(drifted, n)
			continue
		}
		present = append(present, n)
	}
	turn := i.sweepTurn(as, present, b.cfg.sweepUsers())
	var skipped []error
	blocked := map[string]bool{} // one public access block read per bucket
	last := ""                   // the last user read in full
	for k, n := range turn {
		a := as[n]
		ok, err := i.holds(ctx, a, blocked)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", a.Principal, err))
			if stop := sweepStopped(ctx, err, len(turn)-k-1); stop != nil {
				skipped = append(skipped, stop)
				break
			}
		} else if !ok {
			drifted = append(drifted, n)
		}
		last = a.Principal
	}
	if last != "" {
		i.mu.Lock()
		i.swept = last
		i.mu.Unlock()
	}
	slices.Sort(drifted)
	return drifted, errors.Join(skipped...)
}

// sweepTurn is this sweep's turn among present (indices in as of the
// accesses whose user exists): at most limit of them, in principal order,
// starting after the last principal a sweep read in full and going round,
// so that every user is read in full once every len(present)/limit
// sweeps, the users added meanwhile in their place.
func (i *iamIssuer) sweepTurn(as []drivers.Access, present []int, limit int) []int {
	if len(present) <= limit {
		return present
	}
	order := slices.Clone(present)
	slices.SortFunc(order, func(x, y int) int { return strings.Compare(as[x].Principal, as[y].Principal) })
	i.mu.Lock()
	after := i.swept
	i.mu.Unlock()
	var start int
	if after == "" {
		// This process's first turn starts anywhere: a controller
		// restarted (or a shard moved) more often than a round takes
		// still reads every user in time, not the first ones again.
		start = rand.IntN(len(order))
	} else {
		start, _ = slices.BinarySearchFunc(order, after, func(n int, p string) int { return strings.Compare(as[n].Principal, p) })
		if start < len(order) && as[order[start]].Principal == after {
			start++
		}
	}
	turn := make([]int, 0, limit)
	for k := range limit {
		turn = append(turn, order[(start+k)%len(order)])
	}
	return turn
}

// holds reports whether a's user has a key, and exactly buckety's
// policy with its role's actions on its bucket (blocked: as accessPolicy).
func (i *iamIssuer) holds(ctx context.Context, a drivers.Access, blocked map[string]bool) (bool, error) {
	b, c := i.b, i.iam
	keys, err := c.ListAccessKeys(ctx, a.Principal)
	if err != nil {
		return false, b.adminError("list the keys of "+a.Principal, err)
	}
	if len(keys) == 0 {
		return false, nil
	}
	names, err := c.ListUserPolicies(ctx, a.Principal)
	if err != nil {
		return false, b.adminError("list the policies of "+a.Principal, err)
	}
	if !slices.Equal(names, []string{iamPolicyName}) {
		return false, nil
	}
	got, err := c.GetUserPolicy(ctx, a.Principal, iamPolicyName)
	if iam.IsNoSuchEntity(err) {
		return false, nil
	}
	if err != nil {
		return false, b.adminError("get the policy of "+a.Principal, err)
	}
	want, err := i.accessPolicy(ctx, a, blocked)
	if err != nil {
		return false, err
	}
	// Servers store a one-item list as a string (SeaweedFS does):
	// compared as policies, not as text.
	return policy.Equal(string(got), string(want)), nil
}

// list names the users buckety made (path /buckety/ where the server
// keeps paths; every bky user where it does not).
func (i *iamIssuer) list(ctx context.Context) (map[string]bool, error) {
	users, err := i.iam.ListUsers(ctx, IAMPath)
	if err != nil {
		return nil, i.b.adminError("list users", err)
	}
	out := map[string]bool{}
	for _, u := range users {
		if strings.HasPrefix(u.UserName, "bky") {
			out[u.UserName] = true
		}
	}
	return out, nil
}
