package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
)

// The MinIO issuer: a user per access, holding one canned policy of its
// own (buckety-<principal>): the role's actions on the bucket, and every
// admin action denied. A user owns no other key, so no credential can
// reach another's (service accounts of one parent can delete each other:
// credentials issued before users were service accounts under
// credentials.parentUser, and are replaced by users as they are next
// asserted). Only MinIO minioadmin.MinRelease or newer is trusted.
type minioIssuer struct {
	b     *Backend
	admin *minioadmin.Client
}

// ready checks the server's release, then that its IAM answers: the
// server answers its info before its IAM is up (503
// XMinioServerNotInitialized until then), and an answer here means
// credentials can be issued now.
func (m *minioIssuer) ready(ctx context.Context) (string, error) {
	versions, err := m.admin.ServerRelease(ctx)
	if err != nil {
		return "", m.b.adminError("read the server's release", err)
	}
	if why := minioadmin.ReleaseProblem(versions); why != "" {
		return why, nil
	}
	if _, err := m.admin.KeyTaken(ctx, "bkyprobe-0"); err != nil {
		return "", m.b.adminError("reach the server's IAM", err)
	}
	return "", nil
}

// inspect reports whether the key is taken, by a user or a service account.
func (m *minioIssuer) inspect(ctx context.Context, principal string) (bool, error) {
	found, err := m.admin.KeyTaken(ctx, principal)
	if err != nil {
		return false, m.b.adminError("inspect key "+principal, err)
	}
	return found, nil
}

// MinIOPolicyName is the canned policy of a credential's user on MinIO.
func MinIOPolicyName(principal string) string { return "buckety-" + principal }

// grant makes the access's user hold its secret and exactly its own
// canned policy: the policy first, then the user, then the attachment, so
// a user that exists at any point between has no rights or its role's.
// Every step is an upsert: a grant that stopped half way is finished by
// the next. A credential issued before credentials were users (a service
// account of the legacy parent) is replaced by a user with the same key
// and secret.
func (m *minioIssuer) grant(ctx context.Context, a drivers.Access, secret string) (string, error) {
	doc, err := minioBucketsPolicy(a.Resources(), roleOf(a))
	if err != nil {
		return "", err
	}
	if err := m.b.fitUserPolicy(a, doc); err != nil {
		return "", err
	}
	name := MinIOPolicyName(a.Principal)
	for try := 0; ; try++ {
		if err := m.admin.PutCannedPolicy(ctx, name, doc); err != nil {
			return "", m.b.adminError("write policy "+name, err)
		}
		err = m.admin.SetUser(ctx, a.Principal, secret)
		if errors.Is(err, minioadmin.ErrNotAUser) {
			if err = m.dropLegacyKey(ctx, a.Principal); err == nil {
				err = m.admin.SetUser(ctx, a.Principal, secret)
			}
		}
		if err != nil {
			return "", m.b.adminError("make user "+a.Principal, err)
		}
		err = m.admin.SetUserPolicy(ctx, a.Principal, name)
		// A server that reloads its IAM state from disk while we write
		// (MinIO does so periodically, and first just after it starts)
		// may lose a write made during the reload: the attach then finds
		// no policy or user. Writing both again settles it.
		if try == 0 && (minioadmin.IsCode(err, http.StatusNotFound, minioadmin.CodeNoSuchPolicy) || minioadmin.IsCode(err, http.StatusNotFound, minioadmin.CodeNoSuchUser)) {
			continue
		}
		if err != nil {
			return "", m.b.adminError("attach policy "+name+" to "+a.Principal, err)
		}
		return secret, nil
	}
}

// requests: a grant writes the policy, the user and the attachment,
// twice when the server lost a write to an IAM reload, with a legacy
// service account to inspect and delete; a revocation deletes the user
// and the policy.
func (m *minioIssuer) requests(drivers.Access) int { return 10 }

// errForeignKey: a key under a name buckety recorded is not buckety's.
var errForeignKey = errors.New("s3: not a key buckety issued")

// dropLegacyKey deletes a service account buckety issued under the legacy
// parent (credentials.parentUser) before credentials were users. A service
// account of any other parent is not buckety's: it is left alone, and an
// error says so.
func (m *minioIssuer) dropLegacyKey(ctx context.Context, principal string) error {
	sa, found, err := m.admin.Info(ctx, principal)
	switch {
	case err != nil:
		return err
	case !found:
		return nil
	case sa.ParentUser != m.b.cfg.parentUser():
		return fmt.Errorf("%w: backend %s: key %s is a service account of %q, which buckety did not issue: it is left alone", errForeignKey, m.b.name, principal, sa.ParentUser)
	}
	return m.admin.Delete(ctx, principal)
}

// revoke deletes the access's user (its key fails at once), then its
// policy; a legacy service account is deleted instead of a user.
func (m *minioIssuer) revoke(ctx context.Context, a drivers.Access) error {
	principal := a.Principal
	err := m.admin.RemoveUser(ctx, principal)
	if errors.Is(err, minioadmin.ErrNotAUser) {
		if err = m.dropLegacyKey(ctx, principal); errors.Is(err, errForeignKey) {
			err = nil // nothing of buckety's goes by that name any more
		}
	}
	if err != nil {
		return m.b.adminError("delete user "+principal, err)
	}
	if err := m.admin.RemoveCannedPolicy(ctx, MinIOPolicyName(principal)); err != nil {
		return m.b.adminError("delete policy "+MinIOPolicyName(principal), err)
	}
	return nil
}

// list names the users whose access key starts with bky, and the service
// accounts of the legacy parent user.
func (m *minioIssuer) list(ctx context.Context) (map[string]bool, error) {
	users, err := m.admin.ListUsers(ctx)
	if err != nil {
		return nil, m.b.adminError("list users", err)
	}
	out := map[string]bool{}
	for u := range users {
		if strings.HasPrefix(u, "bky") {
			out[u] = true
		}
	}
	parent := m.b.cfg.parentUser()
	if _, ok := users[parent]; ok {
		accounts, err := m.admin.List(ctx, parent)
		if err != nil {
			return nil, m.b.adminError("list the service accounts of "+parent, err)
		}
		for _, sa := range accounts {
			out[sa.AccessKey] = true
		}
	}
	return out, nil
}

// principals lists buckety's principals on the server by their policies
// (buckety-<principal>), from list-canned-policies, which the server does
// not encrypt: list-users costs an argon2id derivation of 64 MiB in the
// controller, too much for the owner check's every pass (and the sweep's). A user whose
// policy is gone holds no right on the server; the credential sweep
// repairs a live access's.
func (m *minioIssuer) principals(ctx context.Context) (map[string]bool, error) {
	policies, err := m.admin.ListCannedPolicies(ctx)
	if err != nil {
		return nil, m.b.adminError("list policies", err)
	}
	out := map[string]bool{}
	for name := range policies {
		if p, ok := strings.CutPrefix(name, MinIOPolicyName("")); ok && strings.HasPrefix(p, "bky") {
			out[p] = true
		}
	}
	return out, nil
}

// sweep judges every access with one list-canned-policies and one
// user-info per access whose policy is still its own, answers the server
// does not encrypt: list-users answers every user at once, but encrypted
// with argon2id, and its 64 MiB derivation each sweep was most of the
// controller's peak memory (issue 54). Drifted: a missing or disabled
// user, one holding any policy but its own, or its own policy edited or
// missing (a legacy service account is not a user: it drifts, and its
// re-assert replaces it).
func (m *minioIssuer) sweep(ctx context.Context, as []drivers.Access) ([]int, error) {
	policies, err := m.admin.ListCannedPolicies(ctx)
	if err != nil {
		return nil, m.b.adminError("list policies", err)
	}
	var drifted, check []int
	var skipped []error
	for i, a := range as {
		want, err := minioBucketsPolicy(a.Resources(), roleOf(a))
		if err != nil {
			skipped = append(skipped, fmt.Errorf("%s: %w", a.Principal, err))
			continue
		}
		if got, ok := policies[MinIOPolicyName(a.Principal)]; !ok || !policy.Equal(got, string(want)) {
			drifted = append(drifted, i)
			continue
		}
		check = append(check, i)
	}
	lost, err := m.usersLost(ctx, as, check)
	if err != nil {
		skipped = append(skipped, err)
	}
	drifted = append(drifted, lost...)
	slices.Sort(drifted)
	return drifted, errors.Join(skipped...)
}

// sweepReaders bounds the user-info requests of a MinIO sweep in flight:
// one at a time, a sweep of 1000 keys took 51 s on a loaded machine
// (issue 54's run), longer than the default 30 s interval, so sweeps ran
// back to back.
const sweepReaders = 4

// usersLost returns the indices in check whose user does not hold exactly
// its own policy (userHolds), asking sweepReaders at a time. The first
// failure stops it: those judged by then are returned with the error, and
// the rest are judged by the next sweep.
func (m *minioIssuer) usersLost(ctx context.Context, as []drivers.Access, check []int) ([]int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		lost []int
		sem  = make(chan struct{}, sweepReaders)
	)
	for _, i := range check {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p := as[i].Principal
			ok, err := m.userHolds(ctx, p, MinIOPolicyName(p))
			switch {
			case err != nil:
				cancel(err)
			case !ok:
				mu.Lock()
				lost = append(lost, i)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return lost, context.Cause(ctx)
}

// userHolds reports whether principal is an enabled user holding exactly
// the policy name; a key that is not a user does not.
func (m *minioIssuer) userHolds(ctx context.Context, principal, name string) (bool, error) {
	u, found, err := m.admin.UserInfo(ctx, principal)
	switch {
	case errors.Is(err, minioadmin.ErrNotAUser):
		return false, nil
	case err != nil:
		return false, m.b.adminError("read user "+principal, err)
	}
	return found && u.Status == "enabled" && slices.Equal(u.Policies(), []string{name}), nil
}

// denyAdmin is the statement every credential's policy ends with: no
// admin action at all, its own keys included. MinIO lets a user manage
// its own account (change its secret, make service accounts of itself)
// unless a policy denies it explicitly.
var denyAdmin = policy.Statement{Effect: policy.Deny, Action: policy.Strings{"admin:*"}}

// roleNames is actionsOf's roles in a stable order.
func roleNames() []string {
	names := make([]string, 0, len(actionsOf))
	for r := range actionsOf {
		names = append(names, string(r))
	}
	sort.Strings(names)
	return names
}

// bucketNameRE is the characters of an S3 bucket name. Anything else,
// notably '*' and '?', would make a policy's ARNs match other buckets.
var bucketNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// minioAccessPolicy is the policy of an access's user on one bucket
// (minioBucketsPolicy).
func minioAccessPolicy(bucket string, role drivers.Role) ([]byte, error) {
	return minioBucketsPolicy([]string{bucket}, role)
}

// minioBucketsPolicy is the policy of an access's user: exactly the
// role's actions on those buckets, and every admin action denied. Role ""
// is ReadWrite. A policy naming one bucket fits any server; the grant
// bounds one naming several (fitUserPolicy).
func minioBucketsPolicy(buckets []string, role drivers.Role) ([]byte, error) {
	a, ok := actionsOf[role.OrDefault()]
	if !ok {
		return nil, fmt.Errorf("unknown role %q (known: %s)", role, strings.Join(roleNames(), ", "))
	}
	if err := plainBuckets(buckets); err != nil {
		return nil, err
	}
	doc := policy.ForBuckets(buckets, a.Bucket, a.Object)
	doc.Statement = append(doc.Statement, denyAdmin)
	return doc.JSON(), nil
}
