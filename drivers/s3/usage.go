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

// UsageUploads bounds the multipart uploads in progress whose parts a
// usage measurement counts per bucket, and UsageUploadParts the parts it
// reads per upload (one page each): a bucket with more is unknown.
const (
	UsageUploads     = 100
	UsageUploadParts = 1000
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
// at most UsagePages pages either way, plus the bytes of the parts of its
// multipart uploads in progress (uploadBytes), which no listing shows.
// Counting current objects alone, a tenant could keep data as noncurrent
// versions (every key deleted, each leaving a delete marker) or as
// unfinished uploads, measured at 0 bytes, lower the bucket's quota to
// fit (budget.AtLeastUsed trusts a known figure) and fill another bucket
// under the same budget, without end; and abandoned uploads, which stay
// until a lifecycle rule aborts them, would leave the bucket unknown for
// ever were they not counted. A missing bucket, one listed past the cap
// (or with uploads or parts past theirs), or one the service answers
// another error about is unknown; an unreachable service or refused keys
// fail the measurement.
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
	parts, ok, err := b.uploadBytes(ctx, cl, r.Name)
	switch {
	case err != nil:
		return failed("list the uploads of", err)
	case !ok:
		return drivers.Usage{}, nil
	}
	u.Bytes = parts
	if versioned, err := b.everVersioned(ctx, cl, r.Name); err != nil {
		return failed("read the versioning of", err)
	} else if !versioned {
		return b.currentUsage(ctx, cl, r, u, failed)
	}
	u.Source = UsageSourceVersions
	type version struct{ key, id string }
	counted := map[version]struct{}{}
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
		// VersityGW starts a page again at its marker: a version it
		// listed already is counted once.
		for _, v := range page.Versions {
			id := version{aws.ToString(v.Key), aws.ToString(v.VersionId)}
			if _, dup := counted[id]; dup {
				continue
			}
			counted[id] = struct{}{}
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
// again, listing a version twice). A service that implements no versioning
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

// uploadBytes sums the sizes of the parts uploaded so far to bucket's
// multipart uploads not completed or aborted: one ListMultipartUploads
// page of UsageUploads uploads, one ListParts page of UsageUploadParts
// parts per upload. ok is false if either was truncated. A service that
// implements no uploads, or no part listing, holds none.
func (b *Backend) uploadBytes(ctx context.Context, cl *s3.Client, bucket string) (n int64, ok bool, err error) {
	rctx, cancel := b.ctx(ctx)
	out, err := cl.ListMultipartUploads(rctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), MaxUploads: aws.Int32(UsageUploads)})
	cancel()
	switch {
	case isNotImplemented(err):
		return 0, true, nil
	case err != nil:
		return 0, false, err
	case aws.ToBool(out.IsTruncated) || len(out.Uploads) > UsageUploads:
		return 0, false, nil
	}
	for _, up := range out.Uploads {
		rctx, cancel := b.ctx(ctx)
		parts, err := cl.ListParts(rctx, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: up.Key, UploadId: up.UploadId, MaxParts: aws.Int32(UsageUploadParts)})
		cancel()
		switch {
		case isNotImplemented(err):
			continue
		case err != nil:
			return 0, false, err
		case aws.ToBool(parts.IsTruncated) || len(parts.Parts) > UsageUploadParts:
			return 0, false, nil
		}
		for _, p := range parts.Parts {
			n += aws.ToInt64(p.Size)
		}
	}
	return n, true, nil
}

// listPage reads one page within requestTimeout.
func (b *Backend) listPage(ctx context.Context, p *s3.ListObjectsV2Paginator) (*s3.ListObjectsV2Output, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	return p.NextPage(ctx)
}
