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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
)

// Per-access credentials (drivers.CredentialIssuer, CredentialSweeper). A
// backend with credentials set, on implementation minio, versitygw, aws or
// seaweedfs, gives every access a credential of its own: a key on the
// server that may do what its role allows (roles.go) on its bucket and
// nothing else. Each implementation is one issuer:
//
//   - minio (credentials_minio.go): a user per access, holding one canned
//     policy of its own, with every admin action denied;
//   - versitygw (credentials_versitygw.go): a user with role user (no
//     rights of its own), named in buckety's statements of the bucket's
//     policy;
//   - aws, seaweedfs (credentials_iam.go): an IAM user with one inline
//     policy and one key IAM issues.
//
// The words, in this driver, the controller and the API alike: a
// credential is an access's own identity on the server; its principal is
// the name the server knows it by; buckety issues a credential (grant),
// the issuer's server checks it, and revocation removes it. An access
// has a per-access credential, its own, or the shared one: the backend's
// keys.
//
// The principal is bky<installation marker>-<12 hex digits of the SHA-256
// of the access UID>-<serial> (bky<12 hex>-<serial> for an access without
// an installation, as every principal was before installations had
// names), characters of [a-z0-9-], so reconciles are idempotent, a
// tenant cannot choose another's, and an installation lists its own
// (ListPrincipals). A marked name is 26 characters at serial 1: MinIO
// users take any length from 3 (only its service accounts stop at 20, and
// buckety issues none any more), VersityGW 16 to 128 (versityadmin), IAM
// user names 1 to 64. The
// secret is 40 characters from crypto/rand, stored only in the Secret
// (where the server issues the key, as IAM does, the Secret holds the
// issued key and secret).
//
// Whenever the config asks for credentials per access and the server
// cannot issue them (an old MinIO, a gateway without an IAM store),
// Issuing says so with Required set: the controller then hands no access
// the backend's own keys, and Grant refuses to as well.

// issuer gives every access a credential of its own on one
// implementation's server. Adding an implementation (Garage, Ceph RGW) is
// one issuer and its test server. Every method is bounded by the context
// the Backend gives it (the backend's requestTimeout).
type issuer interface {
	// ready reports whether the server can issue credentials now: "" when
	// it can, else why not, naming what the server lacks. An error means
	// it could not be asked.
	ready(ctx context.Context) (string, error)
	// grant makes a's credential (a.Principal) exist with secret and
	// exactly its role's rights on a.Resource, and returns the secret the
	// Secret holds: secret itself, or a key and secret the server issued
	// (issuedSecret). Every step is an upsert, so a grant that stopped
	// half way is finished by the next; a principal that exists although
	// a.JustRecorded() says buckety has just seen it absent is someone else's
	// (*drivers.PrincipalExistsError).
	grant(ctx context.Context, a drivers.Access, secret string) (string, error)
	// revoke removes a's credential: its rights first, so a revocation
	// that stops half way leaves nothing usable, then the credential. A
	// missing one is success.
	revoke(ctx context.Context, a drivers.Access) error
	// inspect reports whether a principal exists on the server.
	inspect(ctx context.Context, principal string) (bool, error)
	// list names every credential buckety issued on the server.
	list(ctx context.Context) (map[string]bool, error)
	// sweep returns the indices, in as, of the accesses whose credential
	// drifted (missing, disabled, or holding other rights than its role's),
	// in a few requests for the whole backend; with an error naming what
	// could not be judged (drivers.CredentialSweeper).
	sweep(ctx context.Context, as []drivers.Access) ([]int, error)
	// requests is the most requests a grant or a revocation of a makes,
	// each bounded by requestTimeout: what bounds the whole (grantTimeout).
	requests(a drivers.Access) int
}

// newIssuer is the issuer of the backend's implementation, nil for one
// buckety issues no credentials on. It is made when the backend is
// opened, whether or not credentials is set: without it the backend still
// revokes the credentials it issued while it was set (the controller keeps
// those until their accesses go).
func (b *Backend) newIssuer() (issuer, error) {
	if !b.srv.issuesKeys() {
		return nil, nil
	}
	hc, err := b.cfg.httpClient()
	if err != nil {
		return nil, err
	}
	return b.srv.issuer(b, adminhttp.Client(hc, b.cfg.timeout())), nil
}

// issuingTTL is how long a backend's answer to Issuing is kept.
const issuingTTL = 5 * time.Minute

var (
	_ drivers.CredentialIssuer  = (*Backend)(nil)
	_ drivers.CredentialSweeper = (*Backend)(nil)
	_ drivers.IssuedSecrets     = (*Backend)(nil)
	_ drivers.SecretMaker       = (*Backend)(nil)
)

// issuing is the credential state of a Backend.
type issuing struct {
	cache drivers.IssuingCache
	// issuer is nil on an implementation without credentials per access.
	issuer issuer
}

// sharedReason is why a backend's config rules out credentials per
// access, "" when it does not.
func (c *Config) sharedReason(backend string) string {
	switch {
	case c.Credentials != nil && !c.perAccess():
		return fmt.Sprintf("backend %s has credentials.mode Shared: every access gets the backend's own keys", backend)
	case !c.perAccess():
		return fmt.Sprintf("backend %s hands every access its own keys: set credentials (implementation %s) for a key per access", backend, strings.Join(serving((*server).issuesKeys), ", "))
	case !c.server().issuesKeys():
		return fmt.Sprintf("backend %s is implementation %q: buckety issues keys per access only on %s", backend, c.Implementation, strings.Join(serving((*server).issuesKeys), ", "))
	}
	return ""
}

// Issuing implements drivers.CredentialIssuer: the issuer's ready, kept
// for issuingTTL (a failure for drivers.IssuingFailTTL).
func (b *Backend) Issuing(ctx context.Context) (drivers.Issuing, error) {
	if why := b.cfg.sharedReason(b.name); why != "" {
		return drivers.Issuing{Reason: why}, nil
	}
	is, err := b.issuer()
	if err != nil {
		return drivers.Issuing{}, err
	}
	return b.scoping.cache.Get(ctx, issuingTTL, func(ctx context.Context) (drivers.Issuing, error) {
		ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
		defer cancel()
		why, err := is.ready(ctx)
		if err != nil {
			return drivers.Issuing{}, err
		}
		if why != "" {
			return drivers.Issuing{Required: true, Reason: fmt.Sprintf("backend %s sets credentials, but %s", b.name, why)}, nil
		}
		return drivers.Issuing{PerAccess: true, Required: true}, nil
	})
}

// issuer is the backend's issuer, or an error naming the implementation
// that has none.
func (b *Backend) issuer() (issuer, error) {
	if b.scoping.issuer == nil {
		return nil, fmt.Errorf("s3: backend %s: no credentials per access on implementation %q", b.name, b.cfg.Implementation)
	}
	return b.scoping.issuer, nil
}

// adminError classifies a failure of an admin API (MinIO's, VersityGW's,
// IAM, SeaweedFS's quota extension): refused keys (the backend's keys are not the server's
// admin) as access denied, a server error, throttling or an unreachable
// server as unavailable (the access waits and retries), and the rest as an
// error naming what was asked.
func (b *Backend) adminError(what string, err error) error {
	err = fmt.Errorf("s3 admin: %s: %w", what, err)
	var (
		me *minioadmin.Error
		ve *versityadmin.Error
		ie *iam.Error
		we *seaweedQuotaError
	)
	status := 0
	switch {
	case errors.As(err, &me):
		status = me.Status
	case errors.As(err, &we):
		status = we.Status
	case errors.As(err, &ve):
		status = ve.Status
	case errors.As(err, &ie):
		status = ie.Status
		switch {
		case iam.IsAccessDenied(err):
			status = http.StatusForbidden
		case ie.Code == iam.CodeThrottling:
			status = http.StatusServiceUnavailable
		}
	default:
		return b.classify(err)
	}
	switch {
	case status == http.StatusForbidden:
		return &drivers.AccessDeniedError{Backend: b.name, Err: err}
	case status >= 500 && status != http.StatusNotImplemented:
		return &drivers.UnavailableError{Backend: b.name, Err: err}
	case lastingRefusal(status):
		return &drivers.RefusedError{Err: err}
	}
	return err
}

// Principal implements drivers.CredentialIssuer.
func (b *Backend) Principal(a drivers.Access, serial int) string { return PrincipalFor(a, serial) }

// PrincipalFor is the principal of an access's credential serial:
// bky<marker>-<12 hex>-<serial> with a.Installation's marker
// (drivers.InstallationMarker), bky<12 hex>-<serial> without one (as
// issued before installations had names). The two are told apart by the
// character after the first 11: '-' in a marked name, a hex digit in a
// legacy one (principalMarker).
func PrincipalFor(a drivers.Access, serial int) string {
	sum := sha256.Sum256([]byte(a.UID))
	h := hex.EncodeToString(sum[:6])
	if a.Installation == "" {
		return "bky" + h + "-" + strconv.Itoa(serial)
	}
	return "bky" + drivers.InstallationMarker(a.Installation) + "-" + h + "-" + strconv.Itoa(serial)
}

// markedPrincipalRE is a principal named with an installation's marker
// (its first group).
var markedPrincipalRE = regexp.MustCompile(`^bky([0-9a-f]{8})-[0-9a-f]{12}-[0-9]+$`)

// principalMarker is the installation marker in a principal's name; ok
// false for a legacy name (bky<12 hex>-<serial>) or any other.
func principalMarker(principal string) (marker string, ok bool) {
	m := markedPrincipalRE.FindStringSubmatch(principal)
	if m == nil {
		return "", false
	}
	return m[1], true
}

var _ drivers.PrincipalLister = (*Backend)(nil)

// ListPrincipals implements drivers.PrincipalLister: of the credentials
// the issuer lists (IssuedCredentials), those whose names carry
// installation's marker. Legacy names carry none and are never listed;
// nor is any name of another form. Each request is bounded by
// requestTimeout, the listing as a whole only by ctx (IAM pages).
func (b *Backend) ListPrincipals(ctx context.Context, installation string) ([]string, error) {
	if installation == "" {
		return nil, fmt.Errorf("s3: backend %s: list principals: %w", b.name, errNoInstallation)
	}
	is, err := b.issuer()
	if err != nil {
		return nil, err
	}
	list := is.list
	if pl, ok := is.(interface {
		principals(context.Context) (map[string]bool, error)
	}); ok {
		list = pl.principals
	}
	all, err := list(ctx)
	if err != nil {
		return nil, err
	}
	want := drivers.InstallationMarker(installation)
	var out []string
	for p := range all {
		if m, ok := principalMarker(p); ok && m == want {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// CredentialKeys implements drivers.CredentialIssuer.
func (b *Backend) CredentialKeys() (string, string) { return SecretAccessKeyID, SecretSecretAccessKey }

// InspectPrincipal implements drivers.CredentialIssuer.
func (b *Backend) InspectPrincipal(ctx context.Context, principal string) (bool, error) {
	is, err := b.issuer()
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	return is.inspect(ctx, principal)
}

// SecretFrom implements drivers.IssuedSecrets: where the server issues the
// key (IAM), the Secret's key and secret as one value, key:secret; on the
// other implementations the secret buckety made, keyed by the principal.
func (b *Backend) SecretFrom(principal string, data map[string][]byte) string {
	if !b.srv.iamKeys {
		return drivers.KeyedSecret(b, principal, data)
	}
	id, secret := string(data[SecretAccessKeyID]), string(data[SecretSecretAccessKey])
	if id == "" || secret == "" {
		return ""
	}
	return issuedSecret(id, secret)
}

// NewSecret implements drivers.SecretMaker: the secret key of a new
// principal; on an IAM server that takes the caller's key (SeaweedFS), a
// key id and secret as one issued value; "" where the server issues the
// key (AWS IAM).
func (b *Backend) NewSecret() (string, error) {
	switch {
	case b.srv.callerKeys:
		return newCallerKey()
	case b.srv.iamKeys:
		return "", nil
	}
	return newSecret()
}

// issuedSecret is a key and secret the server issued, as one value that
// Access.Secret carries; splitIssued splits it.
func issuedSecret(id, secret string) string { return id + ":" + secret }

// splitIssued splits a key:secret value; ok false when it is not one.
func splitIssued(s string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(s, ":")
	return id, secret, ok && id != "" && secret != ""
}

// secretAlphabet is what secrets buckety makes are made of: letters and
// digits, which every implementation and every client's config format
// accepts.
const secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newSecret is 40 characters from crypto/rand (238 bits), MinIO's longest.
func newSecret() (string, error) { return randomFrom(secretAlphabet, 40) }

// randomFrom is n characters of alphabet from crypto/rand.
func randomFrom(alphabet string, n int) (string, error) {
	buf := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range buf {
		r, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		buf[i] = alphabet[r.Int64()]
	}
	return string(buf), nil
}

// roleOf is an access's role, ReadWrite when unset.
func roleOf(a drivers.Access) drivers.Role { return a.Role.OrDefault() }

// grantCredential issues or re-asserts an access's credential and its
// rights, and returns its Secret payload on top of data (endpoint,
// bucket, region).
func (b *Backend) grantCredential(ctx context.Context, a drivers.Access, data map[string][]byte) (drivers.Grant, error) {
	if _, ok := actionsOf[roleOf(a)]; !ok {
		return drivers.Grant{}, fmt.Errorf("s3: backend %s: role %q has no actions", b.name, a.Role)
	}
	secret, assert := a.Secret, a.Asserts()
	if secret == "" {
		s, err := newSecret()
		if err != nil {
			return drivers.Grant{}, err
		}
		secret, assert = s, true
	}
	if assert {
		if !b.cfg.perAccess() {
			// Credentials are kept, not issued, once credentials is unset.
			return drivers.Grant{}, fmt.Errorf("backend %s issues no credentials: credentials.mode is Shared", b.name)
		}
		is, err := b.issuer()
		if err != nil {
			return drivers.Grant{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, b.grantTimeout(is, a))
		defer cancel()
		if secret, err = is.grant(ctx, a, secret); err != nil {
			return drivers.Grant{}, err
		}
	}
	data[SecretAccessKeyID] = []byte(a.Principal)
	data[SecretSecretAccessKey] = []byte(secret)
	if b.srv.iamKeys {
		// The server issued the key: the Secret holds it, not the
		// principal.
		id, sec, ok := splitIssued(secret)
		if !ok {
			return drivers.Grant{}, fmt.Errorf("s3: backend %s: the Secret of %s/%s holds no key the server issued", b.name, a.Namespace, a.Name)
		}
		data[SecretAccessKeyID], data[SecretSecretAccessKey] = []byte(id), []byte(sec)
	}
	return drivers.Grant{Data: data, Principal: a.Principal, PerAccess: true}, nil
}

// revokeCredential removes an access's credential; a missing one is
// success.
func (b *Backend) revokeCredential(ctx context.Context, a drivers.Access) error {
	is, err := b.issuer()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.grantTimeout(is, a))
	defer cancel()
	return is.revoke(ctx, a)
}

// grantTimeout bounds a grant or revocation as a whole: requestTimeout
// for each request it may make (the issuer's requests), each of which its
// client bounds by requestTimeout too. One requestTimeout per bucket was
// less than a grant makes (five to eight requests on IAM, two per bucket
// on VersityGW): a server answering in a fifth of requestTimeout never
// finished one, pass after pass.
func (b *Backend) grantTimeout(is issuer, a drivers.Access) time.Duration {
	return b.cfg.timeout() * time.Duration(max(1, is.requests(a)))
}

// SweepCredentials implements drivers.CredentialSweeper through the
// issuer's sweep. Credentials kept after credentials was unset are not
// repaired. Each request is bounded by requestTimeout (the admin clients'
// HTTP client), the sweep as a whole only by ctx: on IAM it is three
// requests per access, and one requestTimeout for all of them ran out at
// a few hundred accesses, judging only those it reached.
func (b *Backend) SweepCredentials(ctx context.Context, as []drivers.Access) ([]int, error) {
	if len(as) == 0 || !b.cfg.perAccess() {
		return nil, nil
	}
	is, err := b.issuer()
	if err != nil {
		return nil, err
	}
	return is.sweep(ctx, as)
}

// sweepStopped says why a sweep that walks its accesses (or buckets) one
// request at a time stops after err, with left still to judge: the
// server did not answer (drivers.IsUnavailable) or the caller gave up.
// nil: err concerns that one alone, and the sweep goes on. The MinIO
// sweep stops at its first failure of any kind (usersLost).
func sweepStopped(ctx context.Context, err error, left int) error {
	if !drivers.IsUnavailable(err) && ctx.Err() == nil {
		return nil
	}
	if left == 0 {
		return nil
	}
	return fmt.Errorf("sweep stopped, the server unavailable: %d more left to the next sweep", left)
}

// IssuedCredentials names the credentials buckety issued on the backend's
// server (principals starting with bky, on MinIO also the service accounts
// of the legacy parent user). Operators and the fault harness use it to
// count credentials left without an access.
func (b *Backend) IssuedCredentials(ctx context.Context) (map[string]bool, error) {
	is, err := b.issuer()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout())
	defer cancel()
	return is.list(ctx)
}
