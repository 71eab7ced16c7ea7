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
	"sync"
	"time"

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
	// drops are the grants this process took away lately, which its
	// sweeps watch for a stale write putting them back.
	drops grantDrops
	// anon are the buckets whose anonymous read statement this process
	// wrote lately, which its drift sweeps watch for a stale grant
	// putting the statement back or taking it away (anonread.go).
	anon anonWrites
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
		if err := v.setBucketGrant(ctx, bucket, a.Principal, "", nil); err != nil && !saidNoSuchBucket(err) {
			return err
		}
	}
	if err := v.admin.DeleteUser(ctx, a.Principal); err != nil {
		return v.b.adminError("delete user "+a.Principal, err)
	}
	v.drops.forgetPrincipal(a.Principal)
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
		if err := v.setBucketGrant(ctx, bucket, a.Principal, "", nil); err != nil && !saidNoSuchBucket(err) {
			return secret, err
		}
		v.drops.add(bucket, a.Principal)
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
	return v.setBucketGrants(ctx, bucket, map[string]string{principal: role}, before)
}

// setBucketGrants is setBucketGrant for several principals at once (set:
// principal → role, "" removing its grant), in one read and one write.
func (v *versityIssuer) setBucketGrants(ctx context.Context, bucket string, set map[string]string, before func(context.Context) error) error {
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
	for principal, role := range set {
		if role == "" {
			delete(grants, principal)
		} else {
			grants[principal] = role
		}
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
		if _, ok := users[p]; !ok && set[p] == "" {
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

// withoutMissingUsers is doc, a policy the gateway refused (werr), without
// buckety's grants to keys the gateway no longer knows: VersityGW refuses
// any policy naming a user that does not exist, and a grant can outlive
// its user (a principal revoked by its name alone, a user deleted by
// hand). The grant's own write recovers so (setBucketGrants); the other
// writers of the policy (the anonymous read statement) use this. dropped
// is false, with werr, when no grant names a missing user, or the
// refusal says nothing of the policy (the gateway unreachable, the keys
// refused).
func (v *versityIssuer) withoutMissingUsers(ctx context.Context, bucket string, doc []byte, werr error) (out []byte, dropped bool, err error) {
	if drivers.IsUnavailable(werr) || drivers.IsAccessDenied(werr) {
		return nil, false, werr
	}
	grants, gerr := bucketyGrants(doc)
	if gerr != nil && !errors.Is(gerr, errPolicyDrift) {
		return nil, false, werr
	}
	if len(grants) == 0 {
		return nil, false, werr
	}
	users, err := v.admin.ListUsers(ctx)
	if err != nil {
		return nil, false, errors.Join(werr, v.b.adminError("list users", err))
	}
	for p := range grants {
		if _, ok := users[p]; !ok {
			delete(grants, p)
			dropped = true
		}
	}
	if !dropped {
		return nil, false, werr
	}
	out, _, err = mergeBucketPolicy(doc, bucket, grants)
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// sweep makes one ListUsers, and one GetBucketPolicy per bucket: a
// missing user, or a principal whose grant in buckety's statements of any
// of its buckets is not its role (or buckety's statements edited),
// drifted. One bucket that cannot be judged does not keep the others from
// being judged, but a gateway that stops answering (drivers.IsUnavailable)
// ends the sweep there, as the IAM sweep's: the buckets left are judged by
// the next sweep.
//
// Each bucket read is also audited (strayGrants): a principal of as that
// buckety's statements grant on a bucket none of its records names loses
// that grant there, and counts as drifted. Grants are written read-modify-write,
// and the policyLock that keeps two writes apart holds in one process
// only: with the controller sharded, accesses of two namespaces naming one
// bucket are served by two replicas, and one replica's write from a
// policy it read before the other took a principal's grant away (the
// bucket stopped being shared with its access) puts that grant back. The
// access's record no longer names the bucket by then, so nothing else
// would ever take the grant away again. A principal is only judged by
// its own records: as are, on a sharded controller, the Active records
// of the sweeping shard's namespaces alone (whose access and claims are
// settled), so a principal that is not in as, another shard's or a
// retiring key, is never touched. The buckets read are those of as, and
// those this process took a grant of one of as's principals away from
// lately (grantDrops): a bucket that no record of this shard names any
// more is read while a stale write may still land there.
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
	// named is, for each principal of as, the buckets its records name.
	named := map[string]map[string]bool{}
	drifted := map[int]bool{}
	for i, a := range as {
		if _, ok := users[a.Principal]; !ok {
			drifted[i] = true
		}
		if named[a.Principal] == nil {
			named[a.Principal] = map[string]bool{}
		}
		// A principal granted on several buckets is judged on each.
		for _, bucket := range a.Resources() {
			byBucket[bucket] = append(byBucket[bucket], i)
			named[a.Principal][bucket] = true
		}
	}
	buckets := slices.Sorted(maps.Keys(byBucket))
	for _, bucket := range v.drops.watched(named) {
		if _, ok := byBucket[bucket]; !ok {
			buckets = append(buckets, bucket)
		}
	}
	var skipped []error
	for n, bucket := range buckets {
		left := len(buckets) - n - 1
		read := v.drops.clock()
		doc, err := b.bucketPolicy(ctx, cl, bucket)
		if err != nil {
			if !saidNoSuchBucket(err) { // the Buckety's own re-check sees to a missing bucket
				skipped = append(skipped, fmt.Errorf("bucket %s: %w", bucket, err))
			} else {
				v.drops.audited(bucket, named, read, 0) // a bucket gone holds no grant
			}
			if stop := sweepStopped(ctx, err, left); stop != nil {
				skipped = append(skipped, stop)
				break
			}
			continue
		}
		grants, err := bucketyGrants(doc)
		for _, i := range byBucket[bucket] {
			if err != nil || grants[as[i].Principal] != string(roleOf(as[i])) {
				drifted[i] = true
			}
		}
		if stray := strayGrants(doc, bucket, named); len(stray) > 0 {
			if err := v.dropStray(ctx, bucket, stray); err != nil {
				skipped = append(skipped, fmt.Errorf("bucket %s: take away grants no record names: %w", bucket, err))
				if stop := sweepStopped(ctx, err, left); stop != nil {
					skipped = append(skipped, stop)
					break
				}
				continue
			}
			// Its credential held rights beyond its records': drift, and
			// the re-assertion gives back a grant taken away because the
			// records this sweep was given were older than the grant (a
			// bucket the access just gained, recorded before it is
			// granted).
			for i, a := range as {
				if slices.Contains(stray, a.Principal) {
					drifted[i] = true
				}
			}
		}
		v.drops.audited(bucket, named, read, v.dropWatch())
	}
	return slices.Sorted(maps.Keys(drifted)), errors.Join(skipped...)
}

// strayGrants names the principals of the sweep's records (named) that
// buckety's statements in bucket's policy doc grant anything, although no
// record of theirs names bucket. Statements of others, and principals
// with no record in named, are never named.
func strayGrants(doc []byte, bucket string, named map[string]map[string]bool) []string {
	p, err := parsePolicy(doc, isGrantSid)
	if err != nil {
		return nil
	}
	var out []string
	for _, st := range p.owned {
		if st.Principal == nil {
			continue
		}
		for _, k := range st.Principal.AWS {
			if buckets, ok := named[k]; ok && !buckets[bucket] && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// dropStray takes the principals' grants on bucket away, as a grant's
// Drop does (reading the policy again under its lock), in one write, and
// watches the bucket for their grants' return as it would after a Drop.
// It is bounded as a grant of one bucket is: the lock may be held by a
// pass of this process waiting out a gateway that hangs.
func (v *versityIssuer) dropStray(ctx context.Context, bucket string, principals []string) error {
	ctx, cancel := context.WithTimeout(ctx, v.b.grantTimeout(v, drivers.Access{Resource: bucket}))
	defer cancel()
	set := map[string]string{}
	for _, k := range principals {
		set[k] = ""
	}
	if err := v.setBucketGrants(ctx, bucket, set, nil); err != nil && !saidNoSuchBucket(err) {
		return err
	}
	for _, k := range principals {
		v.drops.add(bucket, k)
	}
	return nil
}

// dropWatch is how long after this process took a grant away the bucket
// is still read by the sweeps that judge the principal (grantDrops). A
// read-modify-write of the policy that read it before the grant went (in
// another replica) writes within seven requests of its read: its read,
// the user's probe, delete and creation (or Ensure's BeforeWrite), its
// write, and after a refusal a ListUsers and a second write; each is
// bounded by requestTimeout per attempt, and the SDK makes three. 21
// request timeouts, and a few more to spare.
func (v *versityIssuer) dropWatch() time.Duration { return 24 * v.b.cfg.timeout() }

// grantDrops remembers, in this process, the buckets whose grant to a
// principal it took away lately (a grant's Drop, the sweep's audit), so
// that the sweeps judging the principal read those buckets too, though
// no record names them any more, until a read made dropWatch after the
// drop found the grant gone (or took it away). A record's bucket is
// read anyway; this is for a bucket that no record of the sweeping
// shard names. What a restart or a shard moving to another replica
// forgets is found only where a record of the shard names the bucket.
// The zero value is ready to use.
type grantDrops struct {
	mu sync.Mutex
	// at is bucket → principal → when its grant there was taken away.
	at map[string]map[string]time.Time
	n  int
	// now is time.Now but in tests.
	now func() time.Time
}

// maxGrantDrops bounds what grantDrops holds: the oldest drop is
// forgotten first. Drops of a principal no sweep of this process judges
// (another shard's, since this replica let the shard go) are kept until
// then, and cost no request.
const maxGrantDrops = 4096

func (d *grantDrops) clock() time.Time {
	if d.now != nil {
		return d.now()
	}
	return time.Now()
}

// add remembers that principal's grant on bucket was taken away now.
func (d *grantDrops) add(bucket, principal string) {
	now := d.clock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[string]map[string]time.Time{}
	}
	if d.at[bucket] == nil {
		d.at[bucket] = map[string]time.Time{}
	}
	if _, ok := d.at[bucket][principal]; !ok {
		d.n++
	}
	d.at[bucket][principal] = now
	for d.n > maxGrantDrops {
		d.forgetOldest()
	}
}

// forgetOldest forgets the oldest drop; d.mu is held.
func (d *grantDrops) forgetOldest() {
	var ob, op string
	var oldest time.Time
	for b, ps := range d.at {
		for p, t := range ps {
			if ob == "" || t.Before(oldest) {
				ob, op, oldest = b, p, t
			}
		}
	}
	d.forget(ob, op)
}

// forget forgets one drop; d.mu is held.
func (d *grantDrops) forget(bucket, principal string) {
	if _, ok := d.at[bucket][principal]; !ok {
		return
	}
	delete(d.at[bucket], principal)
	d.n--
	if len(d.at[bucket]) == 0 {
		delete(d.at, bucket)
	}
}

// forgetPrincipal forgets every drop of a principal: its user is
// deleted, and a grant naming it that comes back grants nothing.
func (d *grantDrops) forgetPrincipal(principal string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for b := range d.at {
		d.forget(b, principal)
	}
}

// watched lists, sorted, the buckets that took a grant away from a
// principal of named that its records do not name there.
func (d *grantDrops) watched(named map[string]map[string]bool) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for b, ps := range d.at {
		for p := range ps {
			if buckets, ok := named[p]; ok && !buckets[b] {
				out = append(out, b)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// audited forgets the drops on bucket that a read of its policy, begun
// at read, judged (principals of named whose records do not name bucket),
// when the read began watch after the drop or later: a stale write had
// landed by then.
func (d *grantDrops) audited(bucket string, named map[string]map[string]bool, read time.Time, watch time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, t := range d.at[bucket] {
		if buckets, ok := named[p]; ok && !buckets[bucket] && !read.Before(t.Add(watch)) {
			d.forget(bucket, p)
		}
	}
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
