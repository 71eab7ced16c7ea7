package s3

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
)

var _ drivers.Sweeper = (*Backend)(nil)

// SweepCoverage implements drivers.Sweeper. S3 has a batch answer only for
// existence (ListBuckets); versioning, lifecycle and location are read
// per bucket (GetBucketVersioning, GetBucketLifecycleConfiguration,
// GetBucketLocation), and S3 has no API that reads them for many buckets
// (tags, policies and the rest are the same). So a sweep finds a bucket
// deleted out of band, and every bucket keeps its per-object re-check for
// the rest.
func (b *Backend) SweepCoverage() drivers.SweepCoverage { return drivers.SweepPartial }

// Sweep implements drivers.Sweeper: one ListBuckets (paginated where the
// service pages) per endpoint the buckets live on (the backend's, and an R2
// jurisdiction's own). A bucket not listed is confirmed with the HeadBucket
// Ensure itself uses, because ListBuckets lists only the buckets the keys'
// account owns, and a bucket shared with it through a policy is reachable
// but not listed: so requests grow only with the buckets actually missing.
// Everything else about a bucket is left to the per-object re-check (see
// SweepCoverage), but for the anonymous read statement of a bucket whose
// statement this process wrote lately, where a stale write of another
// replica may have put it back or taken it away (auditAnonymousRead): at
// most maxAnonAudits GetBucketPolicy (32) within anonAuditBudget request
// timeouts (2) per sweep, however many buckets are watched, the rest
// read at the next sweeps.
func (b *Backend) Sweep(ctx context.Context, rs []drivers.Resource) ([]drivers.SweepVerdict, error) {
	out := make([]drivers.SweepVerdict, len(rs))
	clients := map[*s3.Client][]int{}
	var order []*s3.Client
	for i, r := range rs {
		cl, err := b.clientFor(parseParams(r.Parameters))
		if err != nil {
			out[i].Err = err
			continue
		}
		if _, ok := clients[cl]; !ok {
			order = append(order, cl)
		}
		clients[cl] = append(clients[cl], i)
	}
	gone := map[int]bool{}
	for _, cl := range order {
		listed, err := b.listBuckets(ctx, cl)
		if err != nil {
			return nil, err
		}
		for _, i := range clients[cl] {
			name := rs[i].Name
			if listed[name] {
				continue
			}
			ok, err := b.confirm(ctx, cl, name)
			switch {
			case err != nil:
				out[i].Err = err
			case !ok:
				out[i].Changes = []string{fmt.Sprintf("bucket %s does not exist", name)}
				gone[i] = true
			}
		}
	}
	b.auditAnonymousRead(ctx, rs, gone, out)
	return out, nil
}

// maxAnonAudits bounds the GetBucketPolicy requests one sweep's audit of
// anonymous read statements sends (auditAnonymousRead), so that the
// sweep's requests do not grow with the buckets watched (up to
// maxAnonWrites, and a tenant toggling anonymousRead on many Bucketies
// grows the watch). Those left out stay watched and are first in line
// at the next sweep: every watched bucket is read within
// ceil(watched/maxAnonAudits) sweeps, 128 at most.
const maxAnonAudits = 32

// anonAuditBudget bounds one sweep's audit of anonymous read statements,
// in request timeouts: a slow gateway (each read answered just within
// the timeout) holds the drift sweep for two timeouts at most, not one
// per watched bucket.
const anonAuditBudget = 2

// auditAnonymousRead judges the anonymous read statement of the buckets
// of rs whose statement this process wrote lately (anonWatch), where a
// stale grant of another replica may put it back or take it away
// (anonread.go): one GetBucketPolicy each, compared with the parameter
// by mergeAnonymousRead, Ensure's own comparison, whose change joins the
// verdict. Every other bucket costs nothing more. The audit is bounded
// whatever the number of buckets watched: at most maxAnonAudits reads,
// first in line first (anonWrites.queue), within anonAuditBudget request
// timeouts, and it stops at the first server error (5xx) or a server
// that does not answer; what it does not read stays watched, first in
// line for the next sweep. A policy that cannot be read leaves its
// resource unjudged (its verdict's Err). A bucket whose policy Ensure
// leaves alone (one the keys may not read, a server without policies,
// a policy that does not parse) is no longer watched: reading it again
// would change nothing.
func (b *Backend) auditAnonymousRead(ctx context.Context, rs []drivers.Resource, gone map[int]bool, out []drivers.SweepVerdict) {
	w, watch := b.anonWatch()
	if w == nil {
		return
	}
	var cands []int
	var names []string
	for i, r := range rs {
		switch {
		case out[i].Err != nil:
			// Unjudged already.
		case gone[i]:
			w.audited(r.Name, w.clock(), 0) // a bucket gone holds no statement
		default:
			cands = append(cands, i)
			names = append(names, r.Name)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, anonAuditBudget*b.cfg.timeout())
	defer cancel()
	sent := 0
	for _, c := range w.queue(names) {
		if sent == maxAnonAudits || ctx.Err() != nil {
			return // the rest stays watched, first in line next sweep
		}
		i, name := cands[c], names[c]
		p := parseParams(rs[i].Parameters)
		want, ok := b.anonymousReadWanted(p, &drivers.EnsureResult{})
		if !ok {
			continue
		}
		cl, err := b.clientFor(p)
		if err != nil {
			out[i].Err = err
			continue
		}
		sent++
		w.requeue(name)
		read := w.clock()
		doc, err := func() ([]byte, error) {
			ctx, cancel := b.ctx(ctx)
			defer cancel()
			return b.bucketPolicy(ctx, cl, name)
		}()
		switch {
		case saidNoSuchBucket(err):
			w.audited(name, read, 0)
			continue
		case err != nil && p.anonymousRead == nil && (drivers.IsAccessDenied(err) || isNotImplemented(err)):
			w.audited(name, read, 0) // Ensure leaves such a policy alone
			continue
		case err != nil && ctx.Err() != nil:
			return // the budget spent: the bucket, at the back of the queue since its read began, is read again in turn
		case err != nil:
			out[i].Err = err
			if drivers.IsUnavailable(err) || httpStatus(err) >= 500 {
				return
			}
			continue
		}
		_, change, err := mergeAnonymousRead(doc, name, want, b.policyMaxBytes())
		switch {
		case err != nil:
			// Ensure fails on it too, and writes nothing: the
			// Buckety's re-check reports it.
			out[i].Err = err
			w.audited(name, read, 0)
		case change != "":
			// Still watched: the bucket is read again until a read
			// after the watch finds the statement as wanted.
			out[i].Changes = append(out[i].Changes, change)
		default:
			w.audited(name, read, watch)
		}
	}
}

// listBuckets names every bucket the keys' account owns on cl's endpoint.
func (b *Backend) listBuckets(ctx context.Context, cl *s3.Client) (map[string]bool, error) {
	listed := map[string]bool{}
	p := s3.NewListBucketsPaginator(cl, &s3.ListBucketsInput{})
	for p.HasMorePages() {
		page, err := func() (*s3.ListBucketsOutput, error) {
			ctx, cancel := b.ctx(ctx)
			defer cancel()
			return p.NextPage(ctx)
		}()
		if err != nil {
			return nil, b.classify(fmt.Errorf("list buckets: %w", err))
		}
		for _, bk := range page.Buckets {
			listed[aws.ToString(bk.Name)] = true
		}
	}
	return listed, nil
}

// confirm asks about one bucket the way Ensure does.
func (b *Backend) confirm(ctx context.Context, cl *s3.Client, name string) (bool, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	return b.exists(ctx, cl, name)
}
