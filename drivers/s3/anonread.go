package s3

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
)

// Anonymous read: with anonymousRead "true" (and allowAnonymousRead in the
// backend's config) the bucket's policy holds one statement of buckety's,
// Sid AnonymousReadSid, letting anyone (Principal "*") get the bucket's
// objects: s3:GetObject on arn:aws:s3:::BUCKET/*, which also answers HEAD.
// Not s3:ListBucket: a reader needs the keys it was given, and anonymous
// callers cannot enumerate a bucket's keys. Every other statement in the
// policy (an operator's, the VersityGW issuer's grants) is kept as it is.
// MinIO, VersityGW and SeaweedFS honour the statement (tested); S3 and R2
// are refused at admission (gateWhy).

// anonymousReadStatements is what buckety wants of the statement: one, or
// none.
func anonymousReadStatements(bucket string, want bool) []policy.Statement {
	if !want {
		return nil
	}
	return []policy.Statement{{
		Sid:       AnonymousReadSid,
		Effect:    policy.Allow,
		Principal: &policy.Principal{AWS: policy.Strings{"*"}},
		Action:    policy.Strings{"s3:GetObject"},
		Resource:  policy.Strings{policy.ObjectsARN(bucket)},
	}}
}

// mergeAnonymousRead is the one comparison of a bucket's policy with the
// anonymous read buckety wants: the change to make ("" when in sync), and
// the policy that makes it (nil: delete the policy, nothing is left in
// it). maxBytes, when not 0, bounds the policy (VersityGW's).
func mergeAnonymousRead(existing []byte, bucket string, want bool, maxBytes int) (merged []byte, change string, err error) {
	p, err := parsePolicy(existing, isAnonymousReadSid)
	if err != nil {
		return nil, "", err
	}
	stmts := anonymousReadStatements(bucket, want)
	if p.ownedAre(stmts) {
		return nil, "", nil
	}
	switch {
	case !want:
		change = "anonymous read removed (bucket policy statement " + AnonymousReadSid + ")"
	case len(p.owned)+len(p.malformed) > 0:
		change = "anonymous read repaired (bucket policy statement " + AnonymousReadSid + ": s3:GetObject for anyone)"
	default:
		change = "anonymous read allowed (bucket policy statement " + AnonymousReadSid + ": s3:GetObject for anyone)"
	}
	empty := len(bytes.TrimSpace(existing)) == 0
	if merged, err = p.render(stmts, empty); err != nil {
		return nil, "", err
	}
	if maxBytes > 0 && len(merged) > maxBytes {
		return nil, "", &drivers.RefusedError{Err: fmt.Errorf("%w: %d bytes for bucket %s with the anonymous read statement, at most %d fit", errPolicyTooLarge, len(merged), bucket, maxBytes)}
	}
	return merged, change, nil
}

// ensureAnonymousRead brings the bucket policy's anonymous read statement
// to the parameter, on the implementations that have it. A policy that
// the backend's keys may not read, or a server without bucket policies,
// is left alone when the parameter is not set: no statement was written
// there; nor, on an implementation without the statement, when it is:
// there is one to remove only if the backend declared another
// implementation before.
func (b *Backend) ensureAnonymousRead(ctx context.Context, cl *s3.Client, bucket string, p params, g *writeGate, res *drivers.EnsureResult) error {
	want, ok := b.anonymousReadWanted(p, res)
	if !ok {
		return nil
	}
	lenient := p.anonymousRead == nil || !b.srv.has(ParamAnonymousRead)
	l := b.policyLock(bucket)
	if err := l.lock(ctx, bucket); err != nil {
		return err
	}
	defer l.unlock()
	cur, err := b.bucketPolicy(ctx, cl, bucket)
	switch {
	case err != nil && lenient && (drivers.IsAccessDenied(err) || isNotImplemented(err)):
		return nil
	case err != nil:
		return err
	}
	next, change, err := mergeAnonymousRead(cur, bucket, want, b.policyMaxBytes())
	if err != nil || change == "" {
		return err
	}
	if g.dryRun {
		res.Changes = append(res.Changes, change)
		return nil
	}
	if err := g.open(ctx); err != nil {
		return err
	}
	// The bucket is watched from before the write: a write the server
	// applied but whose reply was lost fails here, and the retry finds the
	// statement as wanted and writes nothing, so a watch begun only on a
	// reply would never begin, and a stale grant putting the statement
	// back would go unseen until the re-check. A write that failed
	// without landing costs the sweeps a read or two, and they report the
	// statement not yet written as the drift it is. A write that landed
	// moves the watch's start to its reply.
	w, _ := b.anonWatch()
	if w != nil {
		w.add(bucket)
	}
	if err := b.putBucketPolicy(ctx, cl, bucket, next); err != nil {
		// VersityGW refuses a policy whose grants name a user it no
		// longer knows: without those grants the statement is written,
		// rather than the bucket staying public against its parameter
		// until some grant is written there.
		v, ok := b.scoping.issuer.(*versityIssuer)
		if !ok {
			return err
		}
		pruned, dropped, perr := v.withoutMissingUsers(ctx, bucket, next, err)
		if !dropped {
			return perr
		}
		if err := b.putBucketPolicy(ctx, cl, bucket, pruned); err != nil {
			return err
		}
	}
	if w != nil {
		w.add(bucket)
	}
	res.Changes = append(res.Changes, change)
	return nil
}

// anonymousReadWanted is whether the bucket is to be readable by anyone,
// and ok false where there is nothing to do: the implementation has no
// such statement and the parameter is not set. A parameter that asks for
// it where it cannot be had (it was admitted before the gate or the
// config refused it) is a shortfall, and the statement is removed from a
// bucket on a backend whose config no longer allows it. So it is where
// the backend's implementation no longer has the statement (its operator
// changed or removed implementation, which takes allowAnonymousRead
// with it) and the parameter is set, either way: a statement written
// while the backend declared one that has it would otherwise keep the
// bucket public, against the shortfall's word and the tenant's "false".
func (b *Backend) anonymousReadWanted(p params, res *drivers.EnsureResult) (want, ok bool) {
	asked := p.anonymousRead != nil && *p.anonymousRead
	switch {
	case !b.srv.has(ParamAnonymousRead):
		if asked {
			res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamAnonymousRead, Message: "this backend's implementation does not serve anonymous reads through a bucket policy, so the bucket is not public (an anonymous read statement buckety wrote before is removed)"})
		}
		return false, p.anonymousRead != nil
	case asked && !b.cfg.AllowAnonymousRead:
		res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamAnonymousRead, Message: "the backend's config does not set allowAnonymousRead, so the bucket is not public (an anonymous read statement buckety wrote before is removed)"})
		return false, true
	}
	return asked, true
}

// A stale write of the anonymous read statement. On VersityGW the
// issuer's grants share the bucket policy with the anonymous read
// statement, and a grant is a read-modify-write that copies the
// statement as it read it (policy.go). The policyLock that keeps the two
// writers apart holds in one process only: with the controller sharded,
// the Buckety and an access of another namespace granted on its bucket
// are served by two replicas, and a grant merged from a policy read
// before the Buckety's replica removed the statement puts it back (the
// bucket is readable by anyone against its owner's wish), or merged from
// one read before the statement was added takes it away. Nothing else
// would look again before the Buckety's next periodic re-check.
// So the replica that wrote the statement remembers the bucket for a
// while (anonWrites), and its drift sweep reads those buckets' policies
// and compares them with the parameter, as Ensure does
// (auditAnonymousRead, sweep.go): a statement put back or taken away is
// drift, and the Ensure the controller runs for the drifted Buckety
// writes the statement again as its parameter says. The grant's merge
// cannot tell a stale statement from a wanted one: the replica writing
// it knows nothing of the Buckety's parameter.

// anonWatch is where the backend remembers its writes of anonymous read
// statements, and how long after a write it reads the bucket's policy
// again: the VersityGW issuer's (which every VersityGW backend has, its
// credentials set or not), watched for as long as the issuer watches a
// grant it took away, since the stale writes are the same grants. nil on
// other implementations, where Ensure alone writes the bucket policy.
func (b *Backend) anonWatch() (*anonWrites, time.Duration) {
	if v, ok := b.scoping.issuer.(*versityIssuer); ok {
		return &v.anon, v.dropWatch()
	}
	return nil, 0
}

// anonWrites remembers, in this process, the buckets whose anonymous read
// statement it wrote lately (added, repaired or removed), so that its
// drift sweeps read their policies until a read begun the watch after
// the last write found the statement as the parameter wants it. What a
// restart or a shard moving to another replica forgets is found at the
// Buckety's next re-check. The zero value is ready to use.
type anonWrites struct {
	mu sync.Mutex
	// at is bucket → this process's last write of its anonymous read
	// statement, and the bucket's place in the sweeps' audit queue.
	at map[string]anonWrite
	// turns counts the places handed out in the audit queue.
	turns uint64
	// now is time.Now but in tests.
	now func() time.Time
}

// anonWrite is one watched bucket.
type anonWrite struct {
	// wrote is when this process last wrote its anonymous read statement
	// (began the write: a write whose reply is lost may have landed).
	wrote time.Time
	// turn is the bucket's place in the audit queue, lowest first: a
	// bucket joins it behind every bucket watched before it (the oldest
	// write first), and goes to its back when a sweep reads its policy,
	// so that a sweep that audits only some (maxAnonAudits) leaves the
	// rest first in line for the next. Written again, a bucket keeps its
	// place: toggling the parameter does not push it back.
	turn uint64
}

// maxAnonWrites bounds what anonWrites holds: the oldest write is
// forgotten first. A bucket no sweep of this process judges (another
// shard's, since this replica let the shard go) is kept until then, and
// costs no request.
const maxAnonWrites = 4096

func (w *anonWrites) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// add remembers that bucket's anonymous read statement was written now.
func (w *anonWrites) add(bucket string) {
	now := w.clock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[string]anonWrite{}
	}
	e, ok := w.at[bucket]
	if !ok {
		w.turns++
		e.turn = w.turns
	}
	e.wrote = now
	w.at[bucket] = e
	for len(w.at) > maxAnonWrites {
		oldest := ""
		for b, e := range w.at {
			if oldest == "" || e.wrote.Before(w.at[oldest].wrote) {
				oldest = b
			}
		}
		delete(w.at, oldest)
	}
}

// watched reports whether bucket's policy is to be read by the sweep.
func (w *anonWrites) watched(bucket string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.at[bucket]
	return ok
}

// queue orders the watched buckets among buckets as the audit queue
// does, first in line first: their indices in buckets. Buckets not
// watched are left out.
func (w *anonWrites) queue(buckets []string) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int
	for i, b := range buckets {
		if _, ok := w.at[b]; ok {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(i, j int) int { return cmp.Compare(w.at[buckets[i]].turn, w.at[buckets[j]].turn) })
	return out
}

// requeue sends bucket to the back of the audit queue: a sweep reads its
// policy now.
func (w *anonWrites) requeue(bucket string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.at[bucket]; ok {
		w.turns++
		e.turn = w.turns
		w.at[bucket] = e
	}
}

// audited forgets bucket when a read of its policy, begun at read, found
// the statement as wanted, and began watch after the last write or
// later: a stale write had landed by then. With watch 0 it forgets a
// bucket the sweeps need not read again (gone, or a policy Ensure leaves
// alone), unless it was written again after the read.
func (w *anonWrites) audited(bucket string, read time.Time, watch time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e, ok := w.at[bucket]; ok && !read.Before(e.wrote.Add(watch)) {
		delete(w.at, bucket)
	}
}

// policyMaxBytes bounds the bucket policies buckety writes: VersityGW's
// posix backend stores them in an extended attribute of limited size.
func (b *Backend) policyMaxBytes() int { return b.srv.policyMaxBytes }
