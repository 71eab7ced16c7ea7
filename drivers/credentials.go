package drivers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CredentialIssuer is implemented by a Backend that can issue a credential
// per access: a principal of its own on the service, with rights on the
// access's resource per role and nothing else. The controller then records
// each principal it is about to issue (a BucketyCredential) before calling
// Grant, so a crash between the issue and the Secret write leaves a record
// the next pass finishes or revokes, and passes the principal and the
// secret the access's Secret holds (the Secret is the only store of the
// secret) to Grant and Revoke.
//
// Grant on such a backend creates or updates the principal when
// Access.Assert is set (a new credential, a new secret, a Secret read
// afresh, or a changed role) and makes its rights exactly the role's;
// otherwise it returns the Secret payload without a request to the
// service. Revoke removes the principal's rights, then the principal; a
// missing principal is success.
type CredentialIssuer interface {
	// Issuing reports whether this backend issues credentials per access,
	// and when not, why (Issuing.Reason, shown in ScopingNotImplemented).
	// The answer may be cached; an error means the service could not be
	// asked and the access waits.
	Issuing(ctx context.Context) (Issuing, error)
	// Principal derives the principal of an access's credential from the
	// access's UID and the credential's serial (1, then one more per
	// rotation): two accesses never share one, and a tenant cannot choose
	// another's.
	Principal(a Access, serial int) string
	// InspectPrincipal reports whether the principal exists on the service.
	// The controller refuses a principal that exists before it recorded
	// its intent to issue it: such a principal is not buckety's, and is
	// never altered or deleted.
	InspectPrincipal(ctx context.Context, principal string) (bool, error)
	// CredentialKeys names the Secret keys that hold the principal and its
	// secret (kadm: sasl.username, sasl.password): the controller reads the
	// secret back from them.
	CredentialKeys() (principal, secret string)
}

// Issuing is a backend's answer to CredentialIssuer.Issuing.
type Issuing struct {
	// PerAccess is true when every access gets its own credential.
	PerAccess bool
	// Reason says why not, naming what the service or the config lacks.
	Reason string
	// Required is true when the backend's config asks for a credential per
	// access (s3: credentials set). Then, whenever PerAccess is false (the
	// service cannot issue them now: an admin API that answers 501, a
	// release too old to trust), no access is handed the backend's own
	// credentials instead: accesses report the Reason and keep the Secret
	// they have, and new accesses wait.
	Required bool
}

// CredentialSweeper is implemented by a CredentialIssuer that can judge, in
// a few requests for a whole backend, whether each issued principal still
// exists with exactly its role's rights: the drift sweep's counterpart of
// Sweeper for credentials. Changed, added or removed rights, a missing
// principal and a principal whose credential is not of the kind the
// backend now issues (kadm: another SCRAM mechanism) count as drift; the
// controller then re-asserts those accesses
// (Grant with Assert), from their Secrets.
type CredentialSweeper interface {
	// SweepCredentials returns the indices, in as, of the accesses whose
	// principal drifted. Each Access has Principal, Resource, Role,
	// Parameters and the access's identity set. An error with no indices
	// means nothing was judged; with indices, that some accesses could not
	// be judged (one tenant's broken resource never stops the repair of
	// the others), and the indices returned are still to be re-asserted.
	SweepCredentials(ctx context.Context, as []Access) ([]int, error)
}

// IssuedSecrets is implemented by a CredentialIssuer whose service issues
// a principal's key and secret itself (AWS IAM's CreateAccessKey) instead
// of taking the secret buckety issues: the Secret's key then names the
// issued key, not the principal. SecretFrom reads, from an access's
// Secret data, the secret to hand back to Grant as Access.Secret for
// principal ("" when the data holds none); Grant checks it against the
// service when asked to assert.
type IssuedSecrets interface {
	SecretFrom(principal string, data map[string][]byte) string
}

// StaleSecrets is implemented by a CredentialIssuer whose Secret payload
// names a setting the credential was issued under (kadm: sasl.mechanism,
// the SCRAM mechanism the user's password was set for). SecretStale
// reports that data was written under another value of it than the
// backend's config now gives: the principal's secret is then asserted
// again (Grant with Reassert) before the Secret is written with the new
// value, so the Secret never names a setting its credential does not have
// on the service yet.
type StaleSecrets interface {
	SecretStale(data map[string][]byte) bool
}

// SecretStale reports whether an access's Secret data was written under
// a setting sc no longer issues with (StaleSecrets); false for an issuer
// that names none.
func SecretStale(sc CredentialIssuer, data map[string][]byte) bool {
	if st, ok := sc.(StaleSecrets); ok {
		return st.SecretStale(data)
	}
	return false
}

// SecretMaker is implemented by a CredentialIssuer that takes the secret
// buckety issues for a principal. NewSecret returns a fresh one in the
// service's format, or "" when this backend's service issues its own (an
// IAM server: IssuedSecrets), and Grant then issues it. The controller
// makes the secret of a new principal before recording it, so the record
// carries its digest from the start and needs no second write once the
// Secret holds it.
type SecretMaker interface {
	NewSecret() (string, error)
}

// SecretOf returns the secret an access's Secret data holds for principal,
// "" when it holds none: the CredentialKeys' secret where the principal
// key names principal, or what an IssuedSecrets backend reads.
func SecretOf(sc CredentialIssuer, principal string, data map[string][]byte) string {
	if is, ok := sc.(IssuedSecrets); ok {
		return is.SecretFrom(principal, data)
	}
	return KeyedSecret(sc, principal, data)
}

// KeyedSecret is the secret of a principal whose name its Secret holds:
// the CredentialKeys' secret where the principal key names principal, ""
// otherwise.
func KeyedSecret(sc CredentialIssuer, principal string, data map[string][]byte) string {
	principalKey, secretKey := sc.CredentialKeys()
	if string(data[principalKey]) != principal {
		return ""
	}
	return string(data[secretKey])
}

// CredentialsMode is a backend's credentials.mode: whether each access
// gets a credential of its own or the backend's own. The kadm and s3
// drivers spell it the same way in their config blocks.
type CredentialsMode string

// The credentials modes.
const (
	// PerAccess issues each access a credential of its own (kadm: a SCRAM
	// user; s3: a key), with rights on its resource per role and nothing
	// else.
	PerAccess CredentialsMode = "PerAccess"
	// Shared hands every access the backend's own credentials; each such
	// access reports ScopingNotImplemented.
	Shared CredentialsMode = "Shared"
)

// CredentialsModes are the values credentials.mode may take.
var CredentialsModes = []string{string(PerAccess), string(Shared)}

// ValidateCredentialsMode checks a set credentials.mode at p (the mode
// field's path): nil when it is empty or one of CredentialsModes.
func ValidateCredentialsMode(p *field.Path, m CredentialsMode) *field.Error {
	if m == "" || m == PerAccess || m == Shared {
		return nil
	}
	return field.NotSupported(p, string(m), CredentialsModes)
}

// ModeNotice is the startup notice of a mode inferred from an older
// spelling: why names what the file says instead (as "sasl without
// shareCredentials").
func ModeNotice(m CredentialsMode, why string) string {
	return fmt.Sprintf("credentials.mode is not set; %s, as before (%s): set credentials.mode: %s to say so", m, why, m)
}
