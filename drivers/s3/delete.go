package s3

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
)

// Delete: a bucket is emptied in bounded slices, one per call, so that a
// reconcile never holds a worker for the length of a large bucket, then
// deleted. A slice is a Drain step of deleteSlice entries: each request
// has the backend's request timeout of its own, so a slow DeleteObjects
// of a thousand versions does not eat the time of the listings before it.

// Delete implements drivers.Backend: one bounded slice of emptying per call
// (an *drivers.InProgressError while more remains), then DeleteBucket, on
// the endpoint Ensure created the bucket on (an R2 jurisdiction's own).
func (b *Backend) Delete(ctx context.Context, r drivers.Resource) error {
	slice := int(b.cfg.deleteSlice())
	d := &drain{b: b, bucket: r.Name, left: slice, batch: b.deleteBatch.get(slice)}
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return err
	}
	d.cl = cl
	ok, err := d.exists(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return d.deleteUnseen(ctx, r.Name)
	}
	if b.recordUnseen(r.Name) {
		// The pass's owner record read was answered NoSuchBucket: it
		// judged no record, which is not a verdict on this bucket.
		return &drivers.InProgressError{Remaining: -1, Message: b.unseenError(r.Name, "HeadBucket", "emptied or deleted").Error()}
	}
	uploadsEmpty, err := d.abortUploads(ctx)
	if err != nil {
		return err
	}
	versionsEmpty := false
	if d.left > 0 {
		if versionsEmpty, err = d.deleteVersions(ctx); err != nil {
			return err
		}
	}
	removed := d.step.Deleted.Objects
	if !uploadsEmpty || !(versionsEmpty || d.listedToEnd) {
		return &drivers.InProgressError{Done: removed, Remaining: -1,
			Message: fmt.Sprintf("emptying bucket %s: removed %d object versions, delete markers and multipart uploads in this pass; more remain", r.Name, removed)}
	}
	rctx, cancel := d.request(ctx)
	defer cancel()
	_, err = cl.DeleteBucket(rctx, &s3.DeleteBucketInput{Bucket: aws.String(r.Name)})
	switch {
	case err == nil, isCode(err, "NoSuchBucket", "NotFound"):
		return nil
	case isCode(err, "BucketNotEmpty") && removed > 0:
		return &drivers.InProgressError{Done: removed, Remaining: -1, Message: fmt.Sprintf("bucket %s received new objects while it was emptied; continuing", r.Name)}
	case isCode(err, "BucketNotEmpty"):
		return &drivers.InProgressError{Remaining: -1, Message: fmt.Sprintf("bucket %s is not empty, though its listings of object versions and multipart uploads show nothing to remove: retrying, less often each time", r.Name)}
	}
	return b.classify(fmt.Errorf("delete bucket %s: %w", r.Name, err))
}

// deleteUnseen asks DeleteBucket about a bucket whose HEAD answered 404.
// That answer has no body: a proxy in a rollout, or a node whose bucket
// metadata lags, reads as "no such bucket", and taking it for gone would
// release the claim and leave the bucket, data and owner record, to the
// next Buckety of its name. DeleteBucket answers with a body: only its
// NoSuchBucket says the bucket is gone (nil). A bucket that is there and
// not empty is not emptied in this pass: the pass's owner record read
// may have met the same lag (no record, no verdict), and only a pass that
// sees the bucket, and its record, empties it; the next one is asked.
func (d *drain) deleteUnseen(ctx context.Context, bucket string) error {
	rctx, cancel := d.request(ctx)
	defer cancel()
	_, err := d.cl.DeleteBucket(rctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
	switch {
	case err == nil, isCode(err, "NoSuchBucket"):
		return nil
	case isCode(err, "BucketNotEmpty"):
		return &drivers.InProgressError{Remaining: -1, Message: fmt.Sprintf("bucket %s answered HEAD with 404 yet is not empty: waiting until the server shows it to empty it", bucket)}
	}
	return d.b.classify(fmt.Errorf("delete bucket %s (its HEAD answered 404): %w", bucket, err))
}
