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
// replica may have put it back or taken it away (auditAnonymousRead).
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

// auditAnonymousRead judges the anonymous read statement of the buckets
// of rs whose statement this process wrote lately (anonWatch), where a
// stale grant of another replica may put it back or take it away
// (anonread.go): one GetBucketPolicy each, compared with the parameter
// by mergeAnonymousRead, Ensure's own comparison, whose change joins the
// verdict. Every other bucket costs nothing more, so the sweep's
// requests grow only with the anonymous read statements written within
// the watch. A policy that cannot be read leaves its resource unjudged
// (its verdict's Err); a server that stops answering leaves the buckets
// after it to the next sweep, which still watches them.
func (b *Backend) auditAnonymousRead(ctx context.Context, rs []drivers.Resource, gone map[int]bool, out []drivers.SweepVerdict) {
	w, watch := b.anonWatch()
	if w == nil {
		return
	}
	for i, r := range rs {
		switch {
		case out[i].Err != nil || !w.watched(r.Name):
			continue
		case gone[i]:
			w.audited(r.Name, w.clock(), 0) // a bucket gone holds no statement
			continue
		case r.CreateOnly:
			continue // Ensure writes nothing to it
		}
		p := parseParams(r.Parameters)
		want, ok := b.anonymousReadWanted(p, &drivers.EnsureResult{})
		if !ok {
			continue
		}
		cl, err := b.clientFor(p)
		if err != nil {
			out[i].Err = err
			continue
		}
		read := w.clock()
		doc, err := func() ([]byte, error) {
			ctx, cancel := b.ctx(ctx)
			defer cancel()
			return b.bucketPolicy(ctx, cl, r.Name)
		}()
		switch {
		case isNoSuchBucket(err):
			w.audited(r.Name, read, 0)
			continue
		case err != nil && p.anonymousRead == nil && (drivers.IsAccessDenied(err) || isNotImplemented(err)):
			continue // Ensure leaves such a policy alone
		case err != nil:
			out[i].Err = err
			if drivers.IsUnavailable(err) || ctx.Err() != nil {
				return
			}
			continue
		}
		_, change, err := mergeAnonymousRead(doc, r.Name, want, b.policyMaxBytes())
		switch {
		case err != nil:
			out[i].Err = err
		case change != "":
			// Still watched: the bucket is read again until a read
			// after the watch finds the statement as wanted.
			out[i].Changes = append(out[i].Changes, change)
		default:
			w.audited(r.Name, read, watch)
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
