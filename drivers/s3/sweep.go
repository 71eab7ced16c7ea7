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
// SweepCoverage).
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
			}
		}
	}
	return out, nil
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
