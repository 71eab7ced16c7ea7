package kadm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// Per-access credentials (drivers.CredentialIssuer). A backend whose admin
// connection uses SASL, without shareCredentials, on a cluster with an
// authorizer and the SCRAM admin API (KIP-554), gives every access a SCRAM
// user of its own and ACLs for its role on its topic (on each of its
// topics, for an access naming several Bucketies; the group and
// transactional-id ACLs are the access's, once):
//
//	ReadWrite  topic (literal)          Read, Write, Describe
//	           group (prefixed)         Read, Describe
//	           transactional id (pref.) Write, Describe
//	ReadOnly   topic (literal)          Read, Describe
//	           group (prefixed)         Read, Describe
//	WriteOnly  topic (literal)          Write, Describe
//	           transactional id (pref.) Write, Describe
//
// The prefix of groups and transactional ids is the access's own (Secret
// key group.id.prefix): derived from the access's UID, so no two accesses
// share it and it survives rotation (a consumer keeps its offsets), and
// followed by the access's consumerGroupPrefix parameter when set. The
// ACLs on it are PREFIXED, so it must not start another access's prefix:
// see groupPrefix for why it ends its access's part with '_'.
// Idempotent producers need nothing more: since Kafka 3.0 (KIP-679) Write
// on the topic allows them; a cluster older than that needs the
// IdempotentWrite cluster ACL, which buckety never grants (nothing
// cluster-wide for tenants), so producers there set enable.idempotence
// false. Nothing else is granted: no cluster ACL, no topic creation, no
// other topic.

// SecretGroupPrefix is the Secret key holding the prefix of the consumer
// groups and transactional ids an access with a credential of its own may use.
const SecretGroupPrefix = "group.id.prefix"

// principalPrefix starts every principal and group prefix buckety issues,
// so an operator listing users or ACLs sees which are buckety's.
const principalPrefix = "bky."

// scramIterations is the SCRAM iteration count of issued passwords: 4096,
// Kafka's minimum and kafka-configs' default (it accepts up to 16384). The
// password is 256 random bits, so more iterations would add nothing
// against guessing; and kfake, the local broker, announces 4096 whatever
// a user was stored with.
const scramIterations = 4096

// issuingTTL is how long a backend's answer to Issuing is kept: a cluster
// that gains an authorizer or SCRAM is noticed within it.
const issuingTTL = 5 * time.Minute

var (
	_ drivers.CredentialIssuer = (*Backend)(nil)
	_ drivers.SecretMaker      = (*Backend)(nil)
	_ drivers.StaleSecrets     = (*Backend)(nil)
)

// Issuing implements drivers.CredentialIssuer.
func (b *Backend) Issuing(ctx context.Context) (drivers.Issuing, error) {
	if why := b.cfg.sharedReason(b.name); why != "" {
		return drivers.Issuing{Reason: why}, nil
	}
	return b.issuing.Get(ctx, issuingTTL, b.probeIssuing)
}

// sharedReason is why a backend's config rules out per-access
// credentials, "" when it does not.
func (c *Config) sharedReason(backend string) string {
	switch {
	case c.SASL == nil:
		return fmt.Sprintf("backend %s connects without SASL, so the cluster cannot tell one client from another: every access can do what any client can (configure sasl on a cluster with SCRAM and an authorizer for per-access users)", backend)
	case c.ShareCredentials:
		return fmt.Sprintf("backend %s has shareCredentials: every access gets the backend's own user", backend)
	case c.mode() == drivers.Shared:
		return fmt.Sprintf("backend %s has credentials.mode Shared: every access gets the backend's own user", backend)
	}
	return ""
}

// sharedWhy is, in a few words, why a backend's config rules out
// per-access users, "" when it does not.
func (c *Config) sharedWhy() string {
	switch {
	case c.SASL == nil:
		return "it connects without sasl"
	case c.ShareCredentials:
		return "it has shareCredentials"
	case c.mode() == drivers.Shared:
		return "its credentials.mode is Shared"
	}
	return ""
}

// probeIssuing asks the cluster whether it has the SCRAM admin API and an
// authorizer.
func (b *Backend) probeIssuing(ctx context.Context) (drivers.Issuing, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	if _, err := b.adm.DescribeUserSCRAMs(ctx, principalPrefix+"probe"); err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		if errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, kerr.InvalidRequest) || isUnknownKey(err) {
			return drivers.Issuing{Reason: fmt.Sprintf("the cluster of backend %s has no SCRAM admin API (KIP-554, Kafka 2.7): %v", b.name, err)}, nil
		}
		return drivers.Issuing{}, b.classify(fmt.Errorf("describe SCRAM users: %w", err))
	}
	req := describeACLsRequest(kmsg.StringPtr("User:" + principalPrefix + "probe"))
	resp, err := req.RequestWith(ctx, b.kgo)
	if err != nil {
		return drivers.Issuing{}, b.classify(fmt.Errorf("describe ACLs: %w", err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if errors.Is(err, kerr.SecurityDisabled) {
			return drivers.Issuing{Reason: fmt.Sprintf("the cluster of backend %s has no authorizer (DescribeACLs: SECURITY_DISABLED), so ACLs would not be enforced", b.name)}, nil
		}
		return drivers.Issuing{}, b.classify(fmt.Errorf("describe ACLs: %w", err))
	}
	return drivers.Issuing{PerAccess: true}, nil
}

// isUnknownKey reports kgo's refusal to send a request the broker did not
// advertise in ApiVersions (its errors for that are not exported).
func isUnknownKey(err error) bool {
	s := err.Error()
	return strings.Contains(s, "broker is too old") || strings.Contains(s, "request key is unknown")
}

// accessBase is what every principal and the group prefix of one access
// start with: readable (namespace and name) and unique (the UID's hash).
func accessBase(a drivers.Access) string {
	sum := sha256.Sum256([]byte(a.UID))
	return principalPrefix + a.Namespace + "." + a.Name + "." + hex.EncodeToString(sum[:6])
}

// Principal implements drivers.CredentialIssuer (PrincipalFor).
func (b *Backend) Principal(a drivers.Access, serial int) string { return PrincipalFor(a, serial) }

// PrincipalFor is the SCRAM user of an access's credential serial:
// bky.<namespace>.<access>.<12 hex digits of the access UID's
// SHA-256>.<serial>, or, when the access names its installation,
// bky-<installation marker>.<namespace>.<access>.<hash>.<serial>.
//
// Only the principal carries the marker: the access's group prefix
// (groupPrefix) stays bky.<namespace>.<access>.<hash>_, so a tenant's
// consumer groups and transactional ids keep their names (and offsets)
// when an installation starts marking its principals, and principals
// already issued keep the names the controller recorded for them. The
// marked form starts "bky-", never "bky.", so a legacy name is never
// taken for any installation's, and a marker is fixed-length and ends
// with '.', so one installation's prefix never starts another's.
func PrincipalFor(a drivers.Access, serial int) string {
	base := accessBase(a)
	if a.Installation != "" {
		base = installationPrefix(a.Installation) + strings.TrimPrefix(base, principalPrefix)
	}
	return base + "." + strconv.Itoa(serial)
}

// markedPrefix starts the principals of every installation that marks
// them: bky-<8 hex digits>.
const markedPrefix = "bky-"

// installationPrefix starts the principals one installation issues.
func installationPrefix(installation string) string {
	return markedPrefix + drivers.InstallationMarker(installation) + "."
}

// isBucketyUser reports whether a user name has the shape of a principal
// buckety issues: bky.… (unmarked) or bky-<8 hex digits>.… (marked).
func isBucketyUser(user string) bool {
	if strings.HasPrefix(user, principalPrefix) {
		return true
	}
	rest, ok := strings.CutPrefix(user, markedPrefix)
	if !ok || len(rest) < 9 || rest[8] != '.' {
		return false
	}
	_, err := hex.DecodeString(rest[:8])
	return err == nil
}

var _ drivers.PrincipalLister = (*Backend)(nil)

// ListPrincipals implements drivers.PrincipalLister: the SCRAM users whose
// names start with installation's prefix, from one DescribeUserSCRAMs
// request for every user. Unmarked (bky.) users belong to no installation
// that can be told, and are never listed.
func (b *Backend) ListPrincipals(ctx context.Context, installation string) ([]string, error) {
	if installation == "" {
		return nil, fmt.Errorf("kadm: backend %s: list principals: no installation named", b.name)
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	users, err := b.adm.DescribeUserSCRAMs(ctx)
	if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
		return nil, b.classify(fmt.Errorf("describe SCRAM users: %w", err))
	}
	prefix := installationPrefix(installation)
	var out []string
	for u, d := range users {
		if strings.HasPrefix(u, prefix) && d.Err == nil && len(d.CredInfos) > 0 {
			out = append(out, u)
		}
	}
	slices.Sort(out)
	return out, nil
}

// CredentialKeys implements drivers.CredentialIssuer.
func (b *Backend) CredentialKeys() (string, string) { return SecretSASLUsername, SecretSASLPassword }

// SecretStale implements drivers.StaleSecrets: a Secret that names
// another SASL mechanism than credentials.mechanism was written before
// the mechanism was changed, when the user's password was set for that
// one only. A pass that trusted the user would write the new mechanism
// into the Secret before anything set the password for it (the credential
// sweep finds such users drifted, but only once it runs), and a workload
// reconnecting in between would be refused. The access asserts its
// password on the new mechanism first (grantCredential, upsertUser).
func (b *Backend) SecretStale(data map[string][]byte) bool {
	got, ok := data[SecretSASLMechanism]
	if !ok {
		return false
	}
	_, want := b.cfg.mechanism()
	return string(got) != want
}

// accessEnd ends the part of a group prefix that names its access. It is
// a character no Kubernetes name holds (a namespace is a DNS label, an
// access name a DNS subdomain: [a-z0-9.-]) and none of accessBase's, and
// one Kafka and its tools accept in names ([a-zA-Z0-9._-]).
const accessEnd = "_"

// groupPrefix is the prefix of an access's consumer groups and
// transactional ids: bky.<namespace>.<access>.<hash>_ followed by the
// consumerGroupPrefix parameter.
//
// Its ACLs are PREFIXED, so one access's prefix starting another's would
// give the first the second's groups. accessBase alone cannot end it: an
// access name may hold dots, so a tenant who names an access
// b.<b's hash>.x makes b's bky.<namespace>.b.<hash>. start the new
// access's (the shape before accessEnd). With accessEnd, the first '_' of
// a prefix is the one right after its accessBase, whatever the parameter
// holds, so one prefix starts another only when their accessBase is the
// same: the same namespace (it holds no '.'), hash (12 hex digits, last)
// and so name between them, one access.
func groupPrefix(a drivers.Access) string {
	return accessBase(a) + accessEnd + a.Parameters[AccessConsumerGroupPrefix]
}

// InspectPrincipal implements drivers.CredentialIssuer.
func (b *Backend) InspectPrincipal(ctx context.Context, principal string) (bool, error) {
	d, err := b.describeUser(ctx, principal)
	if err != nil {
		return false, err
	}
	return len(d.CredInfos) > 0, nil
}

// mechanism is the SCRAM mechanism of issued users.
func (c *Config) mechanism() (kadm.ScramMechanism, string) {
	if c.Credentials != nil && c.Credentials.Mechanism == "SCRAM-SHA-256" {
		return kadm.ScramSha256, "SCRAM-SHA-256"
	}
	return kadm.ScramSha512, "SCRAM-SHA-512"
}

// NewSecret implements drivers.SecretMaker: a new user's password.
func (*Backend) NewSecret() (string, error) { return newPassword() }

// newPassword is a password from crypto/rand: 32 bytes, URL-safe base64.
func newPassword() (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(buf), nil
}

// grantCredential issues or re-asserts an access's own user, ACLs and
// client quotas, and returns its Secret payload on top of base
// (bootstrap, topic, TLS).
func (b *Backend) grantCredential(ctx context.Context, a drivers.Access, data map[string][]byte) (drivers.Grant, error) {
	// Rights to take away (Drop) are taken away whatever the controller
	// asked for: a grant that trusted the principal would leave them.
	password, assert := a.Secret, a.Asserts() || len(a.Drop) > 0
	if password == "" {
		p, err := newPassword()
		if err != nil {
			return drivers.Grant{}, err
		}
		password, assert = p, true
	}
	mech, mechName := b.cfg.mechanism()
	if assert {
		if err := b.assertCredential(ctx, a, mech, password); err != nil {
			return drivers.Grant{}, err
		}
	}
	data[SecretSASLMechanism] = []byte(mechName)
	data[SecretSASLUsername] = []byte(a.Principal)
	data[SecretSASLPassword] = []byte(password)
	data[SecretGroupPrefix] = []byte(groupPrefix(a))
	return drivers.Grant{Data: data, Principal: a.Principal, PerAccess: true}, nil
}

// assertCredential sets the password, the ACLs and the client quotas of
// an access's user at once: Kafka keeps ACLs and quotas of a principal
// that has no user yet, and each request is batched with other grants'.
// A new principal's ACLs and quotas are created without reading them (its
// only ones are this grant's); an existing one's are made exactly the
// role's and the parameters'.
func (b *Backend) assertCredential(ctx context.Context, a drivers.Access, mech kadm.ScramMechanism, password string) error {
	quotas, err := b.cfg.wantQuotas(a.Parameters)
	if err != nil {
		return fmt.Errorf("kadm: backend %s: grant for %s/%s: %w", b.name, a.Namespace, a.Name, err)
	}
	return concurrently(
		func() error { return b.upsertUser(ctx, a.Principal, mech, password, a.IsNew()) },
		func() error {
			if a.IsNew() && len(a.Drop) == 0 {
				return b.createACLs(ctx, a.Principal, wantACLs(a))
			}
			return b.setACLs(ctx, a.Principal, wantACLs(a))
		},
		func() error { return b.setQuotas(ctx, a.Principal, quotas, a.IsNew()) },
	)
}

// concurrently runs fns at once and returns the first of their errors,
// in the order of fns, once all have returned.
func concurrently(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// upsertUser sets principal's password for mech, then deletes the
// user's credential for the other SCRAM mechanism, so the user
// authenticates with this password on the configured mechanism only.
// After a change of credentials.mechanism the user still has its
// previous password on the other mechanism: left there, a password the
// tenant replaced (a leaked one, whose Secret it deleted) would keep
// logging in, with all the access's ACLs, through that mechanism. The
// credential sweep counts a user holding the other mechanism, or lacking
// the configured one, as drift (acls.go), so the start-up sweep after
// such a change re-asserts every access's password on the new mechanism
// and removes the old one. A crash between the upsert and the deletion
// leaves the other mechanism, which the next sweep reports again.
//
// Two requests, upsert first: Kafka refuses a user named twice in one
// AlterUserSCRAMCredentials request (the batcher never puts a user twice
// in one), and a user that loses its old credential before it has the
// new one cannot log in at all in between. Deleting a mechanism the user
// lacks is success (alterUser); each request is shared with the other
// grants and revocations of its batch. A user being issued (fresh:
// drivers.Access.IsNew) has no credential but what this grant, or an
// interrupted attempt of it, made on the configured mechanism, so the
// deletion is not sent: a new access costs no request more.
func (b *Backend) upsertUser(ctx context.Context, principal string, mech kadm.ScramMechanism, password string, fresh bool) error {
	if err := b.alterUser(ctx, principal, scramOp{upsert: &kadm.UpsertSCRAM{User: principal, Mechanism: mech, Iterations: scramIterations, Password: password}}); err != nil || fresh {
		return err
	}
	return b.alterUser(ctx, principal, scramOp{del: &kadm.DeleteSCRAM{User: principal, Mechanism: otherMechanism(mech)}})
}

// otherMechanism is the SCRAM mechanism that is not mech.
func otherMechanism(mech kadm.ScramMechanism) kadm.ScramMechanism {
	if mech == kadm.ScramSha256 {
		return kadm.ScramSha512
	}
	return kadm.ScramSha256
}

// hasOnlyMechanism reports whether a user's SCRAM credentials are mech's
// and not the other mechanism's (what upsertUser leaves).
func hasOnlyMechanism(infos []kadm.CredInfo, mech kadm.ScramMechanism) bool {
	has := false
	for _, c := range infos {
		switch c.Mechanism {
		case mech:
			has = true
		case otherMechanism(mech):
			return false
		}
	}
	return has
}

// revokeCredential deletes every ALLOW ACL of the principal (an operator's
// DENY ACLs are the operator's, see acls.go) and its client quotas, then
// the principal's SCRAM passwords (both mechanisms). A missing principal
// is success.
func (b *Backend) revokeCredential(ctx context.Context, principal string) error {
	if err := concurrently(
		func() error { return b.deleteACLs(ctx, principal, nil) },
		func() error { return b.clearQuotas(ctx, principal) },
	); err != nil {
		return err
	}
	// Both mechanisms are deleted without reading which the user has: a
	// read answered by a broker whose metadata lags (just after the
	// upsert) lists none, and a revoke that trusted it would delete
	// nothing, report success and leave a user that still authenticates
	// once the controller has dropped the record naming it. Deleting a
	// mechanism the user lacks is success (alterUser). One mechanism per
	// request (Kafka refuses a user twice in one, and the batcher never
	// puts a user twice in one): a revoke costs two
	// AlterUserSCRAMCredentials requests and no read, each shared with
	// the other revocations and grants of its batch.
	for _, mech := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		if err := b.alterUser(ctx, principal, scramOp{del: &kadm.DeleteSCRAM{User: principal, Mechanism: mech}}); err != nil {
			return err
		}
	}
	return nil
}
