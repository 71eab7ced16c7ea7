package s3

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
)

// Inspect: whether a bucket exists and holds anything that deleting it
// would destroy.

// Inspect implements drivers.Backend. It asks the endpoint Ensure would
// create the bucket on (an R2 jurisdiction's own). A bucket that exists but
// answers HeadBucket with 403 belongs to someone else (S3's namespace can be
// global) and counts as content. Empty means empty: besides current objects,
// noncurrent object versions, delete markers and in-progress multipart
// uploads are content, because deleting the bucket would destroy them.
func (b *Backend) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	name := r.Name
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	ok, err := b.exists(ctx, cl, name)
	if drivers.IsAccessDenied(err) && httpStatus(err) == 403 && b.keysWork(ctx, cl) {
		// HeadBucket has no body to tell refused keys from someone else's
		// bucket; keys that list buckets work, so the bucket is not ours
		// to read.
		return drivers.Inspection{Exists: true, HasContent: true, Detail: fmt.Sprintf("bucket %s exists and refuses buckety's keys (403): it belongs to someone else", name)}, nil
	}
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	if !ok {
		return drivers.Inspection{}, nil
	}
	if b.recordUnseen(name) {
		// The last read of its owner record was answered NoSuchBucket:
		// two views of the server (recordUnseen). What the caller would
		// decide on (an adoption, a bucket taken for another's) waits
		// for a read that sees the bucket and its record.
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: the read of its owner record did not see it"}, b.unseenError(name, "HeadBucket", "judged")
	}
	content := func(detail string) (drivers.Inspection, error) {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: detail}, nil
	}
	cannot := func(what string, err error) (drivers.Inspection, error) {
		err = b.classify(err)
		return drivers.Inspection{Exists: true, HasContent: true, Detail: fmt.Sprintf("cannot list %s: %v", what, err)}, err
	}
	out, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name), MaxKeys: aws.Int32(1)})
	if err != nil {
		return cannot("objects", err)
	}
	if len(out.Contents) > 0 {
		return content(fmt.Sprintf("bucket %s holds objects (first: %q)", name, aws.ToString(out.Contents[0].Key)))
	}
	// No current object, so every version listed is noncurrent, and every
	// delete marker hides one or is left over. A backend without
	// versioning (NotImplemented) has neither. A key's delete marker is
	// listed before the versions it hides: one page of a hundred names the
	// versions where there are any.
	vs, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(name), MaxKeys: aws.Int32(100)})
	switch {
	case isNotImplemented(err):
	case err != nil:
		return cannot("object versions", err)
	case len(vs.Versions) > 0:
		v := vs.Versions[0]
		return content(fmt.Sprintf("bucket %s holds no current objects but noncurrent object versions (first: %q version %s); they are data, restorable until deleted", name, aws.ToString(v.Key), aws.ToString(v.VersionId)))
	case len(vs.DeleteMarkers) > 0:
		m := vs.DeleteMarkers[0]
		return content(fmt.Sprintf("bucket %s holds no objects but delete markers (first: %q version %s), left by someone else's versioned writes", name, aws.ToString(m.Key), aws.ToString(m.VersionId)))
	}
	ups, err := cl.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(name), MaxUploads: aws.Int32(1)})
	switch {
	case isNotImplemented(err):
	case err != nil:
		return cannot("multipart uploads", err)
	case len(ups.Uploads) > 0:
		u := ups.Uploads[0]
		return content(fmt.Sprintf("bucket %s holds no objects but in-progress multipart uploads (first: %q, initiated %s): someone is writing to it", name, aws.ToString(u.Key), aws.ToTime(u.Initiated).UTC().Format(time.RFC3339)))
	}
	return drivers.Inspection{Exists: true, Detail: fmt.Sprintf("bucket %s exists and holds no objects, object versions, delete markers or multipart uploads", name)}, nil
}

// keysWork reports whether the backend's keys are the server's: one
// ListBuckets, which the drift sweep needs them to allow anyway.
func (b *Backend) keysWork(ctx context.Context, cl *s3.Client) bool {
	_, err := cl.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(1)})
	return err == nil
}
