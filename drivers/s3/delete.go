package s3

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
)

// Delete: a bucket is emptied in bounded slices, one per call, so that a
// reconcile never holds a worker for the length of a large bucket, then
// deleted.

// Delete implements drivers.Backend: one bounded slice of emptying per call
// (an *drivers.InProgressError while more remains), then DeleteBucket, on
// the endpoint Ensure created the bucket on (an R2 jurisdiction's own).
func (b *Backend) Delete(ctx context.Context, r drivers.Resource) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	name := r.Name
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return err
	}
	ok, err := b.exists(ctx, cl, name)
	if err != nil || !ok {
		return err
	}
	slice := b.cfg.deleteSlice()
	aborted, moreUploads, err := b.abortUploads(ctx, cl, name, slice)
	if err != nil {
		return err
	}
	deleted, moreObjects, err := b.deleteVersions(ctx, cl, name, slice)
	if err != nil {
		return err
	}
	if moreUploads || moreObjects {
		return &drivers.InProgressError{Done: int64(deleted + aborted), Remaining: -1,
			Message: fmt.Sprintf("emptying bucket %s: removed %d object versions and delete markers and aborted %d multipart uploads in this pass; more remain", name, deleted, aborted)}
	}
	_, err = cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	switch {
	case err == nil, isCode(err, "NoSuchBucket", "NotFound"):
		return nil
	case isCode(err, "BucketNotEmpty"):
		return &drivers.InProgressError{Done: int64(deleted + aborted), Remaining: -1, Message: fmt.Sprintf("bucket %s received new objects while it was emptied; continuing", name)}
	}
	return b.classify(fmt.Errorf("delete bucket %s: %w", name, err))
}

func (b *Backend) abortUploads(ctx context.Context, cl *s3.Client, bucket string, limit int32) (int, bool, error) {
	out, err := cl.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), MaxUploads: aws.Int32(limit)})
	if isNotImplemented(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, b.classify(fmt.Errorf("list multipart uploads of %s: %w", bucket, err))
	}
	for _, u := range out.Uploads {
		_, err := cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId})
		if err != nil && !isCode(err, "NoSuchUpload") {
			return 0, false, b.classify(fmt.Errorf("abort multipart upload %s of %s: %w", aws.ToString(u.Key), bucket, err))
		}
	}
	return len(out.Uploads), aws.ToBool(out.IsTruncated), nil
}

// deleteVersions deletes one page of object versions and delete markers
// (falling back to current objects where versions are not implemented).
func (b *Backend) deleteVersions(ctx context.Context, cl *s3.Client, bucket string, limit int32) (int, bool, error) {
	var ids []types.ObjectIdentifier
	var more bool
	out, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(limit)})
	switch {
	case isNotImplemented(err):
		lo, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(limit)})
		if err != nil {
			return 0, false, b.classify(fmt.Errorf("list objects of %s: %w", bucket, err))
		}
		for _, o := range lo.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		more = aws.ToBool(lo.IsTruncated)
	case err != nil:
		return 0, false, b.classify(fmt.Errorf("list object versions of %s: %w", bucket, err))
	default:
		for _, v := range out.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range out.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		more = aws.ToBool(out.IsTruncated)
	}
	if len(ids) == 0 {
		return 0, more, nil
	}
	if int32(len(ids)) > limit {
		ids, more = ids[:limit], true
	}
	res, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
	if err != nil {
		return 0, false, b.classify(fmt.Errorf("delete objects of %s: %w", bucket, err))
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		return len(ids) - len(res.Errors), true, fmt.Errorf("delete objects of %s: %d failed, first %s: %s %s", bucket, len(res.Errors), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
	}
	return len(ids), more, nil
}
