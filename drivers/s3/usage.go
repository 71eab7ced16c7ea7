package s3

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
)

var _ drivers.UsageReporter = (*Backend)(nil)

// Usage sources, as drivers.Usage names them.
const (
	UsageSourceMinIO    = "minio data usage"
	UsageSourceList     = "ListObjectsV2"
	UsageSourceVersions = "ListObjectVersions"
)

// UsagePages bounds the ListObjectsV2 pages (of UsagePageKeys keys) a
// usage measurement reads per bucket where the implementation has no
// usage report: a bucket with more keys is reported unknown rather than
// listed whole every usage interval.
const (
	UsagePages    = 10
	UsagePageKeys = 1000
)

// usageListing is how much listUsage reads of one bucket.
type usageListing struct{ pages, keys int32 }

// listing is the backend's usageListing: the defaults unless a test set
// smaller ones.
func (b *Backend) listing() usageListing {
	if b.usage.pages > 0 {
		return b.usage
	}
	return usageListing{UsagePages, UsagePageKeys}
}

// Usage implements drivers.UsageReporter. On minio it reads MinIO's data
// usage report: one admin request for every bucket, as its scanner last
// counted them (every version's bytes), at the report's time. Elsewhere S3
// has no usage API: each bucket's current objects are listed, at most
// UsagePages pages of UsagePageKeys keys, and a bucket with more is
// unknown.
func (b *Backend) Usage(ctx context.Context, rs []drivers.Resource) ([]drivers.Usage, error) {
	if b.minio != nil {
		return b.minioUsage(ctx, rs)
	}
	out := make([]drivers.Usage, len(rs))
	for i, r := range rs {
		u, err := b.listUsage(ctx, r)
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return out, nil
}

// minioUsage reads the data usage report once for every resource. A
// bucket the scanner has not counted yet is unknown.
func (b *Backend) minioUsage(ctx context.Context, rs []drivers.Resource) ([]drivers.Usage, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	rep, err := b.minio.DataUsage(ctx)
	if err != nil {
		return nil, b.adminError("read the data usage report", err)
	}
	out := make([]drivers.Usage, len(rs))
	for i, r := range rs {
		bu, ok := rep.Buckets[r.Name]
		if !ok || rep.LastUpdate.IsZero() {
			continue
		}
		out[i] = drivers.Usage{Known: true, Bytes: int64(bu.Size), Objects: int64(bu.Objects), MeasuredAt: rep.LastUpdate, Source: UsageSourceMinIO}
	}
	return out, nil
}

// listUsage counts one bucket's bytes and current objects: a bucket
// whose versioning was ever enabled with ListObjectVersions (every
// version's bytes, noncurrent ones included), another with ListObjectsV2,
// at most UsagePages pages either way. A bucket holding multipart uploads
// in progress is unknown: their parts hold bytes no listing shows.
// Counting current objects alone, a tenant could keep data as noncurrent
// versions (every key deleted, each leaving a delete marker) or as
// unfinished uploads, measured at 0 bytes, lower the bucket's quota to
// fit (budget.AtLeastUsed trusts a known figure) and fill another bucket
// under the same budget, without end. A missing bucket, one listed past
// the cap, or one the service answers another error about is unknown; an
// unreachable service or refused keys fail the measurement.
func (b *Backend) listUsage(ctx context.Context, r drivers.Resource) (drivers.Usage, error) {
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		// A jurisdiction without an endpoint: Ensure reports it; the
		// bucket's usage is unknown.
		return drivers.Usage{}, nil
	}
	failed := func(what string, err error) (drivers.Usage, error) {
		err = b.classify(fmt.Errorf("%s bucket %s for its usage: %w", what, r.Name, err))
		if drivers.IsUnavailable(err) || drivers.IsAccessDenied(err) {
			return drivers.Usage{}, err
		}
		return drivers.Usage{}, nil
	}
	lim := b.listing()
	u := drivers.Usage{MeasuredAt: time.Now(), Source: UsageSourceList}
	uploads, err := b.uploadsInProgress(ctx, cl, r.Name)
	switch {
	case err != nil:
		return failed("list the uploads of", err)
	case uploads:
		return drivers.Usage{}, nil
	}
	if versioned, err := b.everVersioned(ctx, cl, r.Name); err != nil {
		return failed("read the versioning of", err)
	} else if !versioned {
		return b.currentUsage(ctx, cl, r, u, failed)
	}
	u.Source = UsageSourceVersions
	versions := s3.NewListObjectVersionsPaginator(cl, &s3.ListObjectVersionsInput{Bucket: aws.String(r.Name), MaxKeys: aws.Int32(lim.keys)})
	for n := int32(0); versions.HasMorePages(); n++ {
		if n == lim.pages {
			return drivers.Usage{}, nil
		}
		rctx, cancel := b.ctx(ctx)
		page, err := versions.NextPage(rctx)
		cancel()
		if n == 0 && isNotImplemented(err) {
			u.Source = UsageSourceList
			return b.currentUsage(ctx, cl, r, u, failed)
		}
		if err != nil {
			return failed("list the versions of", err)
		}
		for _, v := range page.Versions {
			u.Bytes += aws.ToInt64(v.Size)
			if aws.ToBool(v.IsLatest) {
				u.Objects++
			}
		}
	}
	u.Known = true
	return u, nil
}

// currentUsage is listUsage of a bucket that holds no versions: its
// current objects.
func (b *Backend) currentUsage(ctx context.Context, cl *s3.Client, r drivers.Resource, u drivers.Usage, failed func(string, error) (drivers.Usage, error)) (drivers.Usage, error) {
	lim := b.listing()
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(r.Name), MaxKeys: aws.Int32(lim.keys)})
	for n := int32(0); p.HasMorePages(); n++ {
		if n == lim.pages {
			return drivers.Usage{}, nil
		}
		page, err := b.listPage(ctx, p)
		if err != nil {
			return failed("list", err)
		}
		for _, o := range page.Contents {
			u.Bytes += aws.ToInt64(o.Size)
			u.Objects++
		}
	}
	u.Known = true
	return u, nil
}

// everVersioned reports whether bucket's versioning was ever enabled
// (Enabled, or Suspended: the versions made meanwhile stay): only such a
// bucket holds noncurrent versions and delete markers. An unversioned
// bucket's current objects are all it holds, and ListObjectsV2 pages them
// on every server (VersityGW pages a version listing from its marker
// again, counting a key twice). A service that implements no versioning
// has none.
func (b *Backend) everVersioned(ctx context.Context, cl *s3.Client, bucket string) (bool, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	out, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	switch {
	case isNotImplemented(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return out.Status != "", nil
}

// uploadsInProgress reports whether bucket holds a multipart upload not
// completed or aborted (one ListMultipartUploads of one entry); a service
// that implements none holds none.
func (b *Backend) uploadsInProgress(ctx context.Context, cl *s3.Client, bucket string) (bool, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	out, err := cl.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), MaxUploads: aws.Int32(1)})
	switch {
	case isNotImplemented(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return len(out.Uploads) > 0, nil
}

// listPage reads one page within requestTimeout.
func (b *Backend) listPage(ctx context.Context, p *s3.ListObjectsV2Paginator) (*s3.ListObjectsV2Output, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	return p.NextPage(ctx)
}
