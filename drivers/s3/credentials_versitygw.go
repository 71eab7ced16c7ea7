package s3

// The VersityGW issuer (measured against the pinned v1.8.0).
//
// VersityGW has no IAM policies of its own for users: a user with role
// "user" can do nothing until a bucket policy names its access key as a
// principal (ACL grants are refused on BucketOwnerEnforced buckets, the
// default). So buckety issues one gateway user per access through the admin
// API and grants it rights in the bucket's policy, beside whatever
// statements someone else wrote there.
//
// Ordering rules the gateway imposes:
//   - a policy naming a principal that does not exist is refused
//     (MalformedPolicy "Invalid principal in policy"), for every statement
//     in the document, not only buckety's: create the user before granting
//     it, remove its statements before deleting it, and expect a foreign
//     statement naming a deleted user to block every later policy write;
//   - deleting a user takes effect at once in the process that served the
//     delete (its IAM cache drops the entry), but other gateway processes
//     sharing the IAM directory may keep it for --iam-cache-ttl (120 s);
//   - /update-user of a user the gateway has cached keeps the request's
//     access string as the key of the cache's entry (a map assignment
//     replaces a string key, and the gateway's web framework lends the
//     request's buffer, which later requests overwrite): the entry then
//     answers for whatever key that buffer holds next, and a user can be
//     refused SignatureDoesNotMatch for another user's secret (seen once
//     in CI, right after a drift repair re-asserted two users;
//     TestVersityRepairKeepsOtherUsersWorking). So a re-assertion probes
//     the key with its secret first and writes nothing when the gateway
//     already has it, and re-keys a user by deleting and creating it:
//     /create-user copies its strings, and /delete-user stores none;
//   - the posix backend stores the policy in an extended attribute that
//     shares one filesystem block with the bucket's other attributes: on
//     ext4 a policy above about 3.9 KB fails with InternalError (the log
//     says ENOSPC), which the SDK retries. Hence one statement per role and
//     resource level, listing every principal, rather than one per access.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
)

// versityIssuer issues gateway users, granted in bucket policies.
type versityIssuer struct {
	b     *Backend
	admin *versityadmin.Client
	// hc is the admin client's HTTP client, also for key probes
	// (versityadmin.KeyKnown).
	hc *http.Client
}

// ready lists the gateway's users: one without an IAM store answers 501
// (XAdminMethodNotSupported), and cannot have a user per access.
func (v *versityIssuer) ready(ctx context.Context) (string, error) {
	_, err := v.admin.ListUsers(ctx)
	var ve *versityadmin.Error
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &ve) && ve.Status == http.StatusNotImplemented:
		return fmt.Sprintf("its gateway has no IAM store (run it with --iam-dir), so it cannot have a user per access: %v", err), nil
	}
	return "", v.b.adminError("list users", err)
}

// inspect asks the gateway whether it knows the key.
func (v *versityIssuer) inspect(ctx context.Context, principal string) (bool, error) {
	found, err := versityadmin.KeyKnown(ctx, v.b.cfg.Endpoint, v.b.cfg.signingRegion(), principal, v.hc)
	if err != nil {
		return false, v.b.classify(err)
	}
	return found, nil
}

// revoke removes the key from buckety's statements of its buckets'
// policies (every bucket it was granted on, and those it was to lose),
// then deletes its user.
func (v *versityIssuer) revoke(ctx context.Context, a drivers.Access) error {
	for _, bucket := range append(a.Resources(), a.Drop...) {
		if err := v.setBucketGrant(ctx, bucket, a.Principal, "", nil); err != nil && !isNoSuchBucket(err) {
			return err
		}
	}
	if err := v.admin.DeleteUser(ctx, a.Principal); err != nil {
		return v.b.adminError("delete user "+a.Principal, err)
	}
	return nil
}

// list names the users whose access key starts with bky.
func (v *versityIssuer) list(ctx context.Context) (map[string]bool, error) {
	users, err := v.admin.ListUsers(ctx)
	if err != nil {
		return nil, v.b.adminError("list users", err)
	}
	out := map[string]bool{}
	for u := range users {
		if strings.HasPrefix(u, "bky") {
			out[u] = true
		}
	}
	return out, nil
}

// grant names the access's key in buckety's statements of each of its
// buckets' policies for its role, creating or re-keying its user once the
// first bucket's new policy is known to fit: a bucket whose policy cannot
// name one more key gets no user that would be left over. The buckets
// the access is to lose (Access.Drop) lose its grant.
func (v *versityIssuer) grant(ctx context.Context, a drivers.Access, secret string) (string, error) {
	b := v.b
	user := func(ctx context.Context) error {
		if !a.JustRecorded() {
			// Re-asserted (drift repaired, an interrupted issue, a
			// restart): the user is written only when it is missing or
			// holds another secret, never to say again what it holds
			// (see /update-user above).
			st, err := versityadmin.ProbeKey(ctx, b.cfg.Endpoint, b.cfg.signingRegion(), a.Principal, secret, v.hc)
			switch {
			case err != nil:
				return b.classify(err)
			case st == versityadmin.KeyMatches:
				return nil
			case st == versityadmin.KeyOtherSecret:
				// A secret its tenant edited, or an issue interrupted
				// before the Secret held its secret: the user is made
				// again rather than updated, which poisons no cache
				// entry. Its grants stay in the policies meanwhile.
				if err := v.admin.DeleteUser(ctx, a.Principal); err != nil {
					return b.adminError("delete user "+a.Principal+" to re-key it", err)
				}
			}
		}
		err := v.admin.CreateUser(ctx, a.Principal, secret)
		if errors.Is(err, versityadmin.ErrUserExists) {
			if a.JustRecorded() {
				// Not an interrupted issue of ours: someone made it
				// since the controller saw it absent.
				return &drivers.PrincipalExistsError{Backend: b.name, Principal: a.Principal}
			}
			// Made between the probe and the create: the next pass
			// probes again and re-keys it.
		}
		if err != nil {
			return b.adminError("make user "+a.Principal, err)
		}
		return nil
	}
	for _, bucket := range a.Resources() {
		if err := v.setBucketGrant(ctx, bucket, a.Principal, string(roleOf(a)), user); err != nil {
			return secret, err
		}
		user = nil
	}
	for _, bucket := range a.Drop {
		if err := v.setBucketGrant(ctx, bucket, a.Principal, "", nil); err != nil && !isNoSuchBucket(err) {
			return secret, err
		}
	}
	return secret, nil
}

// requests: a grant probes the user's key, may delete and make it again,
// then reads and writes the policy of each bucket it grants on or drops
// (a write the gateway refuses lists its users and writes again); a
// revocation does the same for each bucket, then deletes the user.
func (v *versityIssuer) requests(a drivers.Access) int {
	return 4 + 4*(len(a.Resources())+len(a.Drop))
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
func (v *versityIssuer) setBucketGrant(ctx context.Context, bucket, principal, role string, before func(context.Context) error) error {
	b := v.b
	l := b.policyLock(bucket)
	if err := l.lock(ctx, bucket); err != nil {
		return err
	}
	defer l.unlock()
	cl, err := b.client(b.cfg.Endpoint)
	if err != nil {
		return err
	}
	cur, err := b.bucketPolicy(ctx, cl, bucket)
	if err != nil {
		return err
	}
	grants, err := bucketyGrants(cur)
	if err != nil && !errors.Is(err, errPolicyDrift) {
		grants = map[string]string{} // buckety's statements are rewritten from what is known
	}
	// Statements edited out of band (errPolicyDrift): the well-formed
	// grants read are kept, and only the edited ones rewritten away, or
	// one edited statement would cost every other key on the bucket its
	// grant until the sweep re-asserted it (a retiring key for good).
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
	users, err := v.admin.ListUsers(ctx)
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

// sweep makes one ListUsers, and one GetBucketPolicy per bucket: a
// missing user, or a principal whose grant in buckety's statements of any
// of its buckets is not its role (or buckety's statements edited),
// drifted. One bucket that cannot be judged does not keep the others from
// being judged, but a gateway that stops answering (drivers.IsUnavailable)
// ends the sweep there, as the IAM sweep's: the buckets left are judged by
// the next sweep.
func (v *versityIssuer) sweep(ctx context.Context, as []drivers.Access) ([]int, error) {
	b := v.b
	users, err := v.admin.ListUsers(ctx)
	if err != nil {
		return nil, b.adminError("list users", err)
	}
	cl, err := b.client(b.cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	byBucket := map[string][]int{}
	drifted := map[int]bool{}
	for i, a := range as {
		if _, ok := users[a.Principal]; !ok {
			drifted[i] = true
		}
		// A principal granted on several buckets is judged on each.
		for _, bucket := range a.Resources() {
			byBucket[bucket] = append(byBucket[bucket], i)
		}
	}
	var skipped []error
	left := len(byBucket)
	for bucket, idx := range byBucket {
		left--
		doc, err := b.bucketPolicy(ctx, cl, bucket)
		if err != nil {
			if !isNoSuchBucket(err) { // the Buckety's own re-check sees to a missing bucket
				skipped = append(skipped, fmt.Errorf("bucket %s: %w", bucket, err))
			}
			if stop := sweepStopped(ctx, err, left); stop != nil {
				skipped = append(skipped, stop)
				break
			}
			continue
		}
		grants, err := bucketyGrants(doc)
		for _, i := range idx {
			if err != nil || grants[as[i].Principal] != string(roleOf(as[i])) {
				drifted[i] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(drifted)), errors.Join(skipped...)
}

// errPolicyDrift marks buckety statements in a bucket policy that are not
// what buckety writes (edited actions, principals, resources or fields,
// duplicated, or a principal granted two roles): the caller rewrites them.
var errPolicyDrift = errors.New("buckety's bucket-policy statements differ from what buckety writes")

// errPolicyTooLarge marks a merged policy that the gateway's posix backend
// could not store.
var errPolicyTooLarge = errors.New("bucket policy too large for versitygw")

// versityPolicyMaxBytes is the largest policy buckety writes. Measured on
// ext4: 3912 bytes fit beside a new bucket's ownership and ACL attributes,
// 3924 did not; other attributes (versioning, tags, CORS) take from the same
// block, so keep a margin rather than meet a retried InternalError.
const versityPolicyMaxBytes = 3800

// VersityPolicyMaxBytes is versityPolicyMaxBytes, for tests that fill a
// bucket's policy to the point where buckety refuses to grow it.
const VersityPolicyMaxBytes = versityPolicyMaxBytes

// Grants in bucket policies. The issuer owns the statements whose Sid
// starts with bucketySidPrefix (but for the anonymous read statement,
// policy.go), one per role and resource level:
//
//	buckety-ReadWrite-bucket  actions on arn:aws:s3:::BUCKET
//	buckety-ReadWrite-objects actions on arn:aws:s3:::BUCKET/*
//
// each naming every access key with that role on the bucket. Every other
// statement is someone else's and is copied byte for byte (GetBucketPolicy
// returns the stored bytes unchanged, so the Sid is a reliable marker).

// The resource levels, as they appear in Sids.
const (
	policyLevelBucket  = "bucket"
	policyLevelObjects = "objects"
)

// parseBucketySid splits buckety-ROLE-LEVEL.
func parseBucketySid(sid string) (role, level string, ok bool) {
	rest := strings.TrimPrefix(sid, bucketySidPrefix)
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", "", false
	}
	role, level = rest[:i], rest[i+1:]
	if _, known := actionsOf[drivers.Role(role)]; !known || (level != policyLevelBucket && level != policyLevelObjects) {
		return "", "", false
	}
	return role, level, true
}

// actionsFor is a role's actions at one level, sorted.
func actionsFor(role, level string) []string {
	a := actionsOf[drivers.Role(role)].Bucket
	if level == policyLevelObjects {
		a = actionsOf[drivers.Role(role)].Object
	}
	return slices.Sorted(slices.Values(a))
}

// resourceFor is the resource of one level's statement.
func resourceFor(bucket, level string) string {
	if level == policyLevelObjects {
		return policy.ObjectsARN(bucket)
	}
	return policy.BucketARN(bucket)
}

// wellFormed reports why a buckety statement is not what buckety writes
// for its Sid ("" when it is); bucket "" accepts any bucket.
func wellFormed(st policy.Statement, bucket string) string {
	role, level, ok := parseBucketySid(st.Sid)
	switch {
	case !ok:
		return "unknown role or level in Sid"
	case st.Effect != "Allow":
		return "Effect is not Allow"
	case st.Principal == nil || len(st.Principal.AWS) == 0:
		return "no principals"
	case len(st.Resource) != 1:
		return "resource is not the bucket's"
	case !slices.Equal(slices.Sorted(slices.Values(st.Action)), actionsFor(role, level)):
		return fmt.Sprintf("actions are not the %s role's", role)
	}
	want := resourceFor(bucket, level)
	if bucket == "" {
		// Shape only: arn:aws:s3:::NAME for the bucket, NAME/* for objects.
		name := strings.TrimPrefix(st.Resource[0], "arn:aws:s3:::")
		if level == policyLevelObjects {
			name = strings.TrimSuffix(name, "/*")
		}
		if name == "" || strings.ContainsAny(name, "/*") {
			return "resource is not a bucket's"
		}
		want = resourceFor(name, level)
	}
	if st.Resource[0] != want {
		return "resource is not the bucket's"
	}
	for _, k := range st.Principal.AWS {
		if versityadmin.ValidKey(k) != nil {
			return "a principal is not an access key buckety derives"
		}
	}
	return ""
}

// bucketyGrants reads back the grants (access key → role) that buckety's
// statements in a policy make. A principal counts when it is in both of its
// role's statements. The error wraps errPolicyDrift, with the grants still
// readable, when a buckety statement is malformed, repeated, names
// different buckets, or grants a principal at one level only or two roles:
// such principals are left out, and the caller rewrites the policy.
func bucketyGrants(doc []byte) (map[string]string, error) {
	p, err := parsePolicy(doc, isGrantSid)
	if err != nil {
		return nil, err
	}
	return p.grants("")
}

// grants reads buckety's statements; bucket "" accepts any one bucket.
func (p *parsedPolicy) grants(bucket string) (map[string]string, error) {
	var problems []string
	for _, sid := range p.malformed {
		problems = append(problems, sid+": not the shape buckety writes")
	}
	// levels[key][role] counts the levels a key is granted per role.
	levels := map[string]map[string]int{}
	seen := map[string]bool{}
	for _, st := range p.owned {
		if why := wellFormed(st, bucket); why != "" {
			problems = append(problems, st.Sid+": "+why)
			continue
		}
		if seen[st.Sid] {
			problems = append(problems, st.Sid+": repeated")
			continue
		}
		seen[st.Sid] = true
		if bucket == "" {
			bucket = strings.TrimSuffix(strings.TrimPrefix(st.Resource[0], "arn:aws:s3:::"), "/*")
		}
		role, _, _ := parseBucketySid(st.Sid)
		for _, k := range st.Principal.AWS {
			if levels[k] == nil {
				levels[k] = map[string]int{}
			}
			levels[k][role]++
		}
	}
	grants := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(levels)) {
		roles := levels[k]
		if len(roles) > 1 {
			problems = append(problems, fmt.Sprintf("%s: granted %d roles", k, len(roles)))
			continue
		}
		for role, n := range roles {
			if n != 2 {
				problems = append(problems, fmt.Sprintf("%s: granted %s at one resource level only", k, role))
				continue
			}
			grants[k] = role
		}
	}
	if len(problems) > 0 {
		return grants, fmt.Errorf("%w: %s", errPolicyDrift, strings.Join(problems, "; "))
	}
	return grants, nil
}

// desiredStatements are buckety's statements for grants on a bucket, in
// Sid order.
func desiredStatements(bucket string, grants map[string]string) ([]policy.Statement, error) {
	byRole := map[string][]string{}
	for k, role := range grants {
		if role == "" {
			role = string(drivers.RoleReadWrite)
		}
		if _, ok := actionsOf[drivers.Role(role)]; !ok {
			return nil, fmt.Errorf("access key %s: unknown role %q", k, role)
		}
		if err := versityadmin.ValidKey(k); err != nil {
			// "*" would grant everyone.
			return nil, fmt.Errorf("access key %q: %w", k, err)
		}
		byRole[role] = append(byRole[role], k)
	}
	var out []policy.Statement
	for _, role := range slices.Sorted(maps.Keys(byRole)) {
		keys := byRole[role]
		sort.Strings(keys)
		for _, level := range []string{policyLevelBucket, policyLevelObjects} {
			actions := actionsFor(role, level)
			if len(actions) == 0 {
				continue
			}
			out = append(out, policy.Statement{
				Sid:       bucketySidPrefix + role + "-" + level,
				Effect:    policy.Allow,
				Principal: &policy.Principal{AWS: keys},
				Action:    actions,
				Resource:  policy.Strings{resourceFor(bucket, level)},
			})
		}
	}
	return out, nil
}

// mergeBucketPolicy computes a bucket's policy: the existing one (which may
// be empty) with buckety's statements replaced by those granting grants
// (every buckety access key on the bucket → role, "" meaning ReadWrite).
// Foreign statements are kept byte for byte and in order, followed by
// buckety's in Sid order. changed is false when buckety's statements
// already are what they should be, whatever their order, so a re-check
// writes nothing. A nil policy with changed true means: delete the bucket
// policy (nothing is left in it).
func mergeBucketPolicy(existing []byte, bucket string, grants map[string]string) (merged []byte, changed bool, err error) {
	if bucket == "" {
		return nil, false, errors.New("merge bucket policy: no bucket")
	}
	p, err := parsePolicy(existing, isGrantSid)
	if err != nil {
		return nil, false, err
	}
	want, err := desiredStatements(bucket, grants)
	if err != nil {
		return nil, false, err
	}
	changed = !p.ownedAre(want)
	merged, err = p.render(want, len(bytes.TrimSpace(existing)) == 0)
	if err != nil {
		return nil, false, err
	}
	if merged == nil {
		return nil, len(bytes.TrimSpace(existing)) > 0, nil
	}
	if changed && len(merged) > versityPolicyMaxBytes {
		return nil, false, &drivers.RefusedError{Err: fmt.Errorf("%w: %d bytes for bucket %s with %d grants, at most %d fit", errPolicyTooLarge, len(merged), bucket, len(grants), versityPolicyMaxBytes)}
	}
	return merged, changed, nil
}
