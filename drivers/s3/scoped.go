package s3

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
)

// Keys per access (drivers.CredentialScoper). A backend with credentials
// set, on implementation minio, versitygw, aws or seaweedfs, gives every access a key of
// its own that may do what its role allows (roles.go) on its bucket and
// nothing else:
//
//   - minio: a user per access, holding one canned policy of its own
//     (buckety-<access key>): the role's actions on the bucket, and every
//     admin action denied. A user owns no other key, so no minted key can
//     reach another's (service accounts of one parent can delete each
//     other: keys minted before this were such, under
//     credentials.parentUser, and are replaced by users as they are next
//     asserted). Only MinIO MinMinIORelease or newer is trusted.
//   - versitygw: a user with role user (no rights of its own), named in
//     buckety's statements of the bucket's policy (Sid buckety-...), one
//     statement per role and resource level listing every access key of
//     that role; statements buckety did not write are kept as they are.
//   - aws, seaweedfs: an IAM user with one inline policy and one key IAM
//     issues (iamkeys.go).
//
// The access key is the principal: bky<12 hex digits of the SHA-256 of the
// access UID>-<serial>, at most 20 characters of [a-z0-9-] (MinIO's limit),
// so reconciles are idempotent and a tenant cannot choose another's. The
// secret is 40 characters from crypto/rand, stored only in the Secret.
//
// Whenever the config asks for keys per access and the server cannot mint
// them (an old MinIO, a gateway without an IAM store), Scoping says so
// with Required set: the controller then hands no access the backend's own
// keys, and Grant refuses to as well.

// scopingTTL is how long a backend's answer to Scoping is kept.
const scopingTTL = 5 * time.Minute

var _ drivers.CredentialScoper = (*Backend)(nil)

// scoped is the per-access key state of a Backend.
type scoped struct {
	mu      sync.Mutex
	at      time.Time
	got     drivers.Scoping
	minio   *minioAdmin
	versity *versityAdmin
	iam     *iam.Client
	// hc is the admin clients' HTTP client, also for versitygw's key
	// probes (keyKnown).
	hc *http.Client
	// buckets serialises read-modify-write of one bucket's policy
	// (versitygw): two grants on one bucket must not lose each other's
	// statement.
	buckets sync.Map // bucket → *sync.Mutex
}

// unscopedReason is why a backend's config rules out keys per access, ""
// when it does not.
func (c *Config) unscopedReason(backend string) string {
	switch {
	case c.Credentials == nil:
		return fmt.Sprintf("backend %s hands every access its own keys: set credentials (implementation minio, versitygw, aws or seaweedfs) for a key per access", backend)
	case !mintsKeys(c.Implementation):
		return fmt.Sprintf("backend %s is implementation %q: buckety mints keys per access only on minio, versitygw, aws and seaweedfs", backend, c.Implementation)
	}
	return ""
}

// Scoping implements drivers.CredentialScoper. On minio it makes sure the
// parent user and its policy exist; on versitygw that the gateway has an
// IAM store (users can be listed).
func (b *Backend) Scoping(ctx context.Context) (drivers.Scoping, error) {
	if why := b.cfg.unscopedReason(b.name); why != "" {
		return drivers.Scoping{Reason: why}, nil
	}
	if b.scoped.minio == nil && b.scoped.versity == nil && b.scoped.iam == nil {
		return drivers.Scoping{}, b.noAdmin()
	}
	b.scoped.mu.Lock()
	defer b.scoped.mu.Unlock()
	if !b.scoped.at.IsZero() && time.Since(b.scoped.at) < scopingTTL {
		return b.scoped.got, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	got := drivers.Scoping{Scoped: true, Required: true}
	switch b.cfg.Implementation {
	case ImplMinIO:
		versions, err := b.minioAdmin().serverRelease(ctx)
		if err != nil {
			return drivers.Scoping{}, b.adminError("read the server's release", err)
		}
		if why := releaseProblem(versions); why != "" {
			got = drivers.Scoping{Required: true, Reason: fmt.Sprintf("backend %s sets credentials, but %s", b.name, why)}
			break
		}
		// The server answers its info before its IAM is up (503
		// XMinioServerNotInitialized until then): an answer here means
		// keys can be minted now.
		if _, err := b.minioAdmin().keyTaken(ctx, "bkyprobe-0"); err != nil {
			return drivers.Scoping{}, b.adminError("reach the server's IAM", err)
		}
	case ImplVersityGW:
		if _, err := b.versityAdmin().listUsers(ctx); err != nil {
			if noIAM(err) {
				got = drivers.Scoping{Required: true, Reason: fmt.Sprintf("backend %s sets credentials, but its gateway has no IAM store (run it with --iam-dir), so it cannot have a user per access: %v", b.name, err)}
			} else {
				return drivers.Scoping{}, b.adminError("list users", err)
			}
		}
	case ImplAWS, ImplSeaweedFS:
		if err := b.scopingIAM(ctx); err != nil {
			return drivers.Scoping{}, err
		}
	}
	b.scoped.at, b.scoped.got = time.Now(), got
	return got, nil
}

// adminError classifies an admin API failure: refused keys (the backend's
// keys are not the server's admin) as access denied, a server error or an
// unreachable server as unavailable (the access waits and retries), and
// the rest as a request error naming what was asked.
func (b *Backend) adminError(what string, err error) error {
	err = fmt.Errorf("s3 admin: %s: %w", what, err)
	status := 0
	var me *minioAdminError
	var ve *versityAdminError
	switch {
	case errors.As(err, &me):
		status = me.Status
	case errors.As(err, &ve):
		status = ve.Status
	default:
		return b.classify(err)
	}
	switch {
	case status == http.StatusForbidden:
		return &drivers.AccessDeniedError{Backend: b.name, Err: err}
	case status >= 500 && status != http.StatusNotImplemented:
		return &drivers.UnavailableError{Backend: b.name, Err: err}
	}
	return err
}

// noIAM reports a gateway without an IAM store: its admin API answers 501
// (XAdminMethodNotSupported) to user requests.
func noIAM(err error) bool {
	var ve *versityAdminError
	return errors.As(err, &ve) && ve.Status == http.StatusNotImplemented
}

// openAdmin makes the admin client of a backend that mints keys, once,
// when the backend is opened: with credentials set it mints keys, and
// without it still revokes the keys it minted while credentials were set
// (the controller keeps those until their accesses go).
func (b *Backend) openAdmin() error {
	if !mintsKeys(b.cfg.Implementation) {
		return nil
	}
	hc, err := b.cfg.httpClient()
	if err != nil {
		return err
	}
	hc = boundedAdminClient(hc, b.cfg.timeout())
	b.scoped.hc = hc
	switch b.cfg.Implementation {
	case ImplMinIO:
		b.scoped.minio = newMinioAdmin(b.cfg.Endpoint, b.cfg.signingRegion(), b.cfg.AccessKeyID, b.cfg.SecretAccessKey, hc)
	case ImplVersityGW:
		b.scoped.versity = newVersityAdmin(b.cfg.adminEndpoint(), b.cfg.signingRegion(), b.cfg.AccessKeyID, b.cfg.SecretAccessKey, hc)
	case ImplAWS, ImplSeaweedFS:
		b.scoped.iam = iam.New(b.cfg.iamEndpoint(), b.cfg.iamRegion(), b.cfg.AccessKeyID, b.cfg.SecretAccessKey, hc)
	}
	return nil
}

// noAdmin is the error of a call that needs an admin client the backend
// does not have (implementation neither minio nor versitygw).
func (b *Backend) noAdmin() error {
	return fmt.Errorf("s3: backend %s: no admin API (implementation %q)", b.name, b.cfg.Implementation)
}

func (b *Backend) minioAdmin() *minioAdmin     { return b.scoped.minio }
func (b *Backend) versityAdmin() *versityAdmin { return b.scoped.versity }

// Principal implements drivers.CredentialScoper.
func (b *Backend) Principal(a drivers.Access, serial int) string { return PrincipalFor(a, serial) }

// PrincipalFor is the access key of an access's credential serial.
func PrincipalFor(a drivers.Access, serial int) string {
	sum := sha256.Sum256([]byte(a.UID))
	return "bky" + hex.EncodeToString(sum[:6]) + "-" + strconv.Itoa(serial)
}

// CredentialKeys implements drivers.CredentialScoper.
func (b *Backend) CredentialKeys() (string, string) { return SecretAccessKeyID, SecretSecretAccessKey }

// InspectPrincipal implements drivers.CredentialScoper.
func (b *Backend) InspectPrincipal(ctx context.Context, principal string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	switch b.cfg.Implementation {
	case ImplMinIO:
		if b.scoped.minio == nil {
			return false, b.noAdmin()
		}
		found, err := b.minioAdmin().keyTaken(ctx, principal)
		if err != nil {
			return false, b.adminError("inspect key "+principal, err)
		}
		return found, nil
	case ImplVersityGW:
		if b.scoped.versity == nil {
			return false, b.noAdmin()
		}
		found, err := keyKnown(ctx, b.cfg.Endpoint, b.cfg.signingRegion(), principal, b.scoped.hc)
		if err != nil {
			return false, b.classify(err)
		}
		return found, nil
	case ImplAWS, ImplSeaweedFS:
		if b.scoped.iam == nil {
			return false, b.noAdmin()
		}
		return b.inspectIAM(ctx, principal)
	}
	return false, fmt.Errorf("s3: backend %s: no keys per access on implementation %q", b.name, b.cfg.Implementation)
}

// secretAlphabet is what minted secrets are made of: letters and digits,
// which every implementation and every client's config format accepts.
const secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newSecret is 40 characters from crypto/rand (238 bits), MinIO's longest.
func newSecret() (string, error) {
	buf := make([]byte, 40)
	max := big.NewInt(int64(len(secretAlphabet)))
	for i := range buf {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		buf[i] = secretAlphabet[n.Int64()]
	}
	return string(buf), nil
}

// roleOf is an access's role, ReadWrite when unset.
func roleOf(a drivers.Access) drivers.Role { return a.Role.OrDefault() }

// grantScoped mints or re-asserts an access's own key and its rights, and
// returns its Secret payload on top of data (endpoint, bucket, region).
func (b *Backend) grantScoped(ctx context.Context, a drivers.Access, data map[string][]byte) (drivers.Grant, error) {
	if _, ok := actionsOf[roleOf(a)]; !ok {
		return drivers.Grant{}, fmt.Errorf("s3: backend %s: role %q has no actions", b.name, a.Role)
	}
	secret, assert := a.Secret, a.Assert
	if secret == "" {
		s, err := newSecret()
		if err != nil {
			return drivers.Grant{}, err
		}
		secret, assert = s, true
	}
	if assert {
		ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
		defer cancel()
		var err error
		switch {
		case b.cfg.Credentials == nil:
			// Keys are kept, not minted, once credentials are unset.
			err = fmt.Errorf("backend %s mints no keys: credentials is not set", b.name)
		case b.cfg.Implementation == ImplMinIO:
			err = b.grantMinIO(ctx, a, secret)
		case b.cfg.Implementation == ImplVersityGW:
			err = b.grantVersity(ctx, a, secret)
		case usesIAM(b.cfg.Implementation):
			var id, sec string
			if id, sec, err = b.grantIAM(ctx, a, secret); err == nil {
				secret = id + ":" + sec
			}
		default:
			err = fmt.Errorf("no keys per access on implementation %q", b.cfg.Implementation)
		}
		if err != nil {
			return drivers.Grant{}, err
		}
	}
	data[SecretAccessKeyID] = []byte(a.Principal)
	data[SecretSecretAccessKey] = []byte(secret)
	if usesIAM(b.cfg.Implementation) {
		// IAM issued the key: the Secret holds it, not the user's name.
		id, sec, ok := splitIssued(secret)
		if !ok {
			return drivers.Grant{}, fmt.Errorf("s3: backend %s: the Secret of %s/%s holds no key IAM issued", b.name, a.Namespace, a.Name)
		}
		data[SecretAccessKeyID], data[SecretSecretAccessKey] = []byte(id), []byte(sec)
	}
	return drivers.Grant{Data: data, Principal: a.Principal, Scoped: true}, nil
}

// minioPolicyName is the canned policy of a minted key's user.
func minioPolicyName(principal string) string { return "buckety-" + principal }

// grantMinIO makes the access's user hold its secret and exactly its own
// canned policy: the policy first, then the user, then the attachment, so
// a user that exists at any point between has no rights or its role's.
// Every step is an upsert: a grant that stopped half way is finished by
// the next. A key minted before keys were users (a service account of the
// legacy parent) is replaced by a user with the same key and secret.
func (b *Backend) grantMinIO(ctx context.Context, a drivers.Access, secret string) error {
	policy, err := minioAccessPolicy(a.Resource, roleOf(a))
	if err != nil {
		return err
	}
	m, name := b.minioAdmin(), minioPolicyName(a.Principal)
	for try := 0; ; try++ {
		if err := m.putCannedPolicy(ctx, name, policy); err != nil {
			return b.adminError("write policy "+name, err)
		}
		err = m.setUser(ctx, a.Principal, secret)
		if errors.Is(err, errNotAUser) {
			if err = b.dropLegacyKey(ctx, a.Principal); err == nil {
				err = m.setUser(ctx, a.Principal, secret)
			}
		}
		if err != nil {
			return b.adminError("make user "+a.Principal, err)
		}
		err = m.setUserPolicy(ctx, a.Principal, name)
		// A server that reloads its IAM state from disk while we write
		// (MinIO does so periodically, and first just after it starts)
		// may lose a write made during the reload: the attach then finds
		// no policy or user. Writing both again settles it.
		if try == 0 && (isAdminCode(err, http.StatusNotFound, codeNoSuchPolicy) || isAdminCode(err, http.StatusNotFound, codeNoSuchUser)) {
			continue
		}
		if err != nil {
			return b.adminError("attach policy "+name+" to "+a.Principal, err)
		}
		return nil
	}
}

// errForeignKey: a key under a name buckety recorded is not buckety's.
var errForeignKey = errors.New("s3: not a key buckety minted")

// dropLegacyKey deletes a service account buckety minted under the legacy
// parent (credentials.parentUser) before keys were users. A service
// account of any other parent is not buckety's: it is left alone, and an
// error says so.
func (b *Backend) dropLegacyKey(ctx context.Context, principal string) error {
	m := b.minioAdmin()
	sa, found, err := m.info(ctx, principal)
	switch {
	case err != nil:
		return err
	case !found:
		return nil
	case sa.ParentUser != b.cfg.parentUser():
		return fmt.Errorf("%w: backend %s: key %s is a service account of %q, which buckety did not mint: it is left alone", errForeignKey, b.name, principal, sa.ParentUser)
	}
	return m.delete(ctx, principal)
}

// bucketLock is the lock of one bucket's policy.
func (b *Backend) bucketLock(bucket string) *sync.Mutex {
	l, _ := b.scoped.buckets.LoadOrStore(bucket, &sync.Mutex{})
	return l.(*sync.Mutex)
}

// grantVersity names the access's key in buckety's statements of the
// bucket policy for its role, creating or re-keying its user once the new
// policy is known to fit: a bucket whose policy cannot name one more key
// gets no user that would be left over.
func (b *Backend) grantVersity(ctx context.Context, a drivers.Access, secret string) error {
	v := b.versityAdmin()
	return b.setBucketGrant(ctx, a.Resource, a.Principal, string(roleOf(a)), func(ctx context.Context) error {
		err := v.createUser(ctx, a.Principal, secret)
		if errors.Is(err, errUserExists) {
			if a.Recorded {
				// Not an interrupted mint of ours: someone made it
				// since the controller saw it absent.
				return &drivers.PrincipalExistsError{Backend: b.name, Principal: a.Principal}
			}
			err = v.updateSecret(ctx, a.Principal, secret)
		}
		if err != nil {
			return b.adminError("make user "+a.Principal, err)
		}
		return nil
	})
}

// setBucketGrant makes principal's grant on bucket role ("" removes it)
// in buckety's statements of the bucket policy, keeping every other
// statement as it is. before, when set, runs once the new policy is
// known to fit, and before it is written (the user it names must exist
// by then). A grant costs a read and a write of the bucket's policy,
// whatever the number of users: the gateway's users are listed only when
// it refuses a policy (it refuses one naming a user that no longer
// exists, deleted out of band), to drop such keys from buckety's
// statements.
func (b *Backend) setBucketGrant(ctx context.Context, bucket, principal, role string, before func(context.Context) error) error {
	l := b.bucketLock(bucket)
	l.Lock()
	defer l.Unlock()
	cl, err := b.client(b.cfg.Endpoint)
	if err != nil {
		return err
	}
	cur, err := b.bucketPolicy(ctx, cl, bucket)
	if err != nil {
		return err
	}
	grants, err := bucketyGrants(cur)
	if err != nil {
		grants = map[string]string{} // buckety's statements are rewritten from what is known
	}
	if role == "" {
		delete(grants, principal)
	} else {
		grants[principal] = role
	}
	next, changed, err := mergeBucketPolicy(cur, bucket, grants)
	if err != nil {
		return err
	}
	if before != nil {
		if err := before(ctx); err != nil {
			return err
		}
	}
	if !changed {
		return nil
	}
	werr := b.putBucketPolicy(ctx, cl, bucket, next)
	if werr == nil || drivers.IsUnavailable(werr) || drivers.IsAccessDenied(werr) {
		return werr
	}
	users, err := b.versityAdmin().listUsers(ctx)
	if err != nil {
		return errors.Join(werr, b.adminError("list users", err))
	}
	dropped := false
	for p := range grants {
		if _, ok := users[p]; !ok && p != principal {
			delete(grants, p)
			dropped = true
		}
	}
	if !dropped {
		return werr
	}
	if next, _, err = mergeBucketPolicy(cur, bucket, grants); err != nil {
		return err
	}
	return b.putBucketPolicy(ctx, cl, bucket, next)
}

// revokeScoped removes an access's key: its rights first, then the key.
// A missing key is success.
func (b *Backend) revokeScoped(ctx context.Context, a drivers.Access) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	switch b.cfg.Implementation {
	case ImplMinIO:
		if b.scoped.minio == nil {
			return b.noAdmin()
		}
		return b.revokeMinIO(ctx, a.Principal)
	case ImplVersityGW:
		if b.scoped.versity == nil {
			return b.noAdmin()
		}
		if a.Resource != "" {
			if err := b.setBucketGrant(ctx, a.Resource, a.Principal, "", nil); err != nil && !isNoSuchBucket(err) {
				return err
			}
		}
		if err := b.versityAdmin().deleteUser(ctx, a.Principal); err != nil {
			return b.adminError("delete user "+a.Principal, err)
		}
	case ImplAWS, ImplSeaweedFS:
		if b.scoped.iam == nil {
			return b.noAdmin()
		}
		return b.revokeIAM(ctx, a.Principal)
	}
	return nil
}

// revokeMinIO deletes the access's user (its key fails at once), then its
// policy; a legacy service account is deleted instead of a user.
func (b *Backend) revokeMinIO(ctx context.Context, principal string) error {
	m := b.minioAdmin()
	err := m.removeUser(ctx, principal)
	if errors.Is(err, errNotAUser) {
		if err = b.dropLegacyKey(ctx, principal); errors.Is(err, errForeignKey) {
			err = nil // nothing of buckety's goes by that name any more
		}
	}
	if err != nil {
		return b.adminError("delete user "+principal, err)
	}
	if err := m.removeCannedPolicy(ctx, minioPolicyName(principal)); err != nil {
		return b.adminError("delete policy "+minioPolicyName(principal), err)
	}
	return nil
}

// MintedKeys lists the keys buckety minted on the backend's server: the
// users whose access key starts with bky, and the service accounts of the
// legacy parent user (minio); the users whose access key starts with bky
// (versitygw). Operators and the fault harness use it to
// count keys left without an access.
func (b *Backend) MintedKeys(ctx context.Context) (map[string]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	out := map[string]bool{}
	switch {
	case b.scoped.minio != nil:
		m := b.scoped.minio
		users, err := m.listUsers(ctx)
		if err != nil {
			return nil, b.adminError("list users", err)
		}
		for u := range users {
			if strings.HasPrefix(u, "bky") {
				out[u] = true
			}
		}
		if _, ok := users[b.cfg.parentUser()]; ok {
			accounts, err := m.list(ctx, b.cfg.parentUser())
			if err != nil {
				return nil, b.adminError("list the service accounts of "+b.cfg.parentUser(), err)
			}
			for _, sa := range accounts {
				out[sa.AccessKey] = true
			}
		}
	case b.scoped.versity != nil:
		users, err := b.scoped.versity.listUsers(ctx)
		if err != nil {
			return nil, b.adminError("list users", err)
		}
		for u := range users {
			if strings.HasPrefix(u, "bky") {
				out[u] = true
			}
		}
	case b.scoped.iam != nil:
		return b.mintedIAMUsers(ctx)
	default:
		return nil, fmt.Errorf("s3: backend %s mints no keys (credentials not set, or implementation %q)", b.name, b.cfg.Implementation)
	}
	return out, nil
}
