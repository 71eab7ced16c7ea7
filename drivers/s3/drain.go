package s3

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
)

// Drain: a bucket is emptied the way Delete empties it, and kept. One step
// removes at most DrainLimits.Units entries, in DeleteObjects batches of
// deleteSlice (1,000 by default), so that a bucket of a million objects
// takes many short steps and never holds a worker. The listings start
// from the beginning every time: what a batch deleted no longer lists, so
// the next page is what remains, and a controller that crashed mid-drain
// needs nothing but the bucket to continue.

// DefaultDrainUnits is how many entries (object versions, delete markers
// and multipart uploads) one Drain step removes when DrainLimits.Units is 0.
const DefaultDrainUnits = 10000

var _ drivers.Drainer = (*Backend)(nil)

// Drain implements drivers.Drainer: it aborts multipart uploads, then
// deletes every object version and delete marker (every current object
// where the service implements no versions), until the step has removed
// limits.Units entries or found the bucket empty. It never deletes the
// bucket and never touches its versioning, policy, tags, lifecycle or
// quota. It runs with the backend's own keys, on the endpoint Ensure
// created the bucket on (an R2 jurisdiction's own). Each request has the
// backend's request timeout, not the step as a whole, so a step of many
// batches is bounded by Units rather than by one timeout.
//
// Done is reported when the step's last listings of uploads and versions
// came back empty; Remaining is known (zero) then, and unknown when the
// step stopped at its Units.
func (b *Backend) Drain(ctx context.Context, r drivers.Resource, limits drivers.DrainLimits) (drivers.DrainStep, error) {
	units := limits.Units
	if units <= 0 {
		units = DefaultDrainUnits
	}
	d := &drain{b: b, bucket: r.Name, left: units, batch: min(b.deleteBatch.get(int(b.cfg.deleteSlice())), units), stop: limits.Stop}
	d.step.Deleted.Known = true
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return d.step, err
	}
	d.cl = cl
	ok, err := d.exists(ctx)
	if err != nil {
		return d.step, err
	}
	if !ok {
		return d.step, fmt.Errorf("s3: backend %s: bucket %s does not exist: there is nothing to drain", b.name, r.Name)
	}
	if b.recordUnseen(r.Name) {
		return d.step, b.unseenError(r.Name, "HeadBucket", "drained")
	}
	uploadsEmpty, err := d.abortUploads(ctx)
	if err != nil || d.stopped {
		return d.step, err
	}
	versionsEmpty := false
	if d.left > 0 {
		if versionsEmpty, err = d.deleteVersions(ctx); err != nil || d.stopped {
			return d.step, err
		}
	}
	switch {
	case uploadsEmpty && versionsEmpty:
		d.step.Done = true
		d.step.Remaining = drivers.Content{Known: true}
	case uploadsEmpty && d.listedToEnd:
		// The units ran out on the last page: nothing was left to list,
		// though only the next step's listing can tell it is Done.
		d.step.Remaining = drivers.Content{Known: true}
	case uploadsEmpty && limits.CountAhead > 0:
		// A count is a figure for status, not part of the drain: a
		// listing that fails leaves Remaining unknown, and the step,
		// whose deletions stand, succeeds.
		if rest, err := d.countRest(ctx, limits.CountAhead); err == nil {
			d.step.Remaining = rest
		}
	}
	return d.step, nil
}

// countRest lists, without deleting, what the bucket still holds after
// the step's deletions, up to budget entries: Known with the count and
// bytes when the listing reached the end within it, unknown otherwise.
// The step's Requests count its pages.
func (d *drain) countRest(ctx context.Context, budget int) (drivers.Content, error) {
	rest := drivers.Content{}
	var keyMarker, versionMarker, token *string
	for int(rest.Objects) <= budget {
		rctx, cancel := d.request(ctx)
		truncated := false
		if d.noVersions {
			out, err := d.cl.ListObjectsV2(rctx, &s3.ListObjectsV2Input{Bucket: aws.String(d.bucket), ContinuationToken: token})
			cancel()
			if err != nil {
				return drivers.Content{}, err
			}
			for _, o := range out.Contents {
				rest.Objects++
				rest.Bytes += aws.ToInt64(o.Size)
			}
			truncated, token = aws.ToBool(out.IsTruncated), out.NextContinuationToken
		} else {
			out, err := d.cl.ListObjectVersions(rctx, &s3.ListObjectVersionsInput{Bucket: aws.String(d.bucket), KeyMarker: keyMarker, VersionIdMarker: versionMarker})
			cancel()
			if err != nil {
				return drivers.Content{}, err
			}
			for _, v := range out.Versions {
				rest.Objects++
				rest.Bytes += aws.ToInt64(v.Size)
			}
			rest.Objects += int64(len(out.DeleteMarkers))
			truncated, keyMarker, versionMarker = aws.ToBool(out.IsTruncated), out.NextKeyMarker, out.NextVersionIdMarker
		}
		if !truncated {
			rest.Known = int(rest.Objects) <= budget
			return rest, nil
		}
	}
	return drivers.Content{}, nil
}

// drain is one Drain step's state.
type drain struct {
	b      *Backend
	cl     *s3.Client
	bucket string
	// left is how many entries the step may still remove; batch is the
	// most one listing page and DeleteObjects request hold.
	left, batch int
	// noVersions records that the service answered ListObjectVersions
	// NotImplemented, so the step's further pages list current objects
	// straight away.
	noVersions bool
	// listedToEnd records that the last listing of versions was not
	// truncated, and everything it listed was deleted.
	listedToEnd bool
	// lost is what a DeleteObjects whose answer was lost (it ran out of
	// requestTimeout) asked to delete: the server may have deleted any of
	// it. The next listing settles it (settle), so that what the step
	// reports deleted is what left the bucket.
	lost []entry
	step drivers.DrainStep
	// stop is DrainLimits.Stop; stopped records that it ended the step.
	stop    func() bool
	stopped bool
}

// halt reports whether the step ends before its next batch of deletions
// because the drain was called off (DrainLimits.Stop).
func (d *drain) halt() bool {
	if !d.stopped && d.stop != nil && d.stop() {
		d.stopped = true
	}
	return d.stopped
}

// entry is one listed object version, delete marker or current object,
// with its size.
type entry struct {
	id   types.ObjectIdentifier
	size int64
}

// settle counts, of the entries a lost DeleteObjects asked for, those a
// listing of the bucket's first entries (ids, truncated) shows to be
// gone, and forgets those it shows to be still there (a later batch
// deletes and counts them). An entry past the listing's last key, where
// the listing was truncated, stays lost for the next listing. Listings
// are in key order, and the lost batch was a first page too, so a listing
// of as many entries as it held covers all of it unless keys were written
// before it meanwhile. Each entry counted is one of the step's units.
func (d *drain) settle(ids []types.ObjectIdentifier, truncated bool) {
	if len(d.lost) == 0 {
		return
	}
	listed := make(map[string]bool, len(ids))
	last := ""
	for _, id := range ids {
		k := aws.ToString(id.Key)
		listed[k+"\x00"+aws.ToString(id.VersionId)] = true
		last = max(last, k)
	}
	var still []entry
	for _, e := range d.lost {
		k := aws.ToString(e.id.Key)
		switch {
		case listed[k+"\x00"+aws.ToString(e.id.VersionId)]:
		case !truncated || k < last:
			d.step.Deleted.Objects++
			d.step.Deleted.Bytes += e.size
			d.left--
		default:
			still = append(still, e)
		}
	}
	d.lost = still
}

// request gives one request the backend's timeout and counts it.
func (d *drain) request(ctx context.Context) (context.Context, context.CancelFunc) {
	d.step.Requests++
	return d.b.ctx(ctx)
}

func (d *drain) exists(ctx context.Context) (bool, error) {
	rctx, cancel := d.request(ctx)
	defer cancel()
	return d.b.exists(rctx, d.cl, d.bucket)
}

// page is how many entries the next listing asks for.
func (d *drain) page() int32 { return int32(min(d.batch, d.left)) }

// maxAbortsPerStep bounds the multipart uploads one step or deletion pass
// aborts: each is a request of its own, in series, where a DeleteObjects
// removes a thousand versions, so a step of DefaultDrainUnits uploads
// would hold its worker for minutes on a remote server.
const maxAbortsPerStep = 100

// abortUploads aborts multipart uploads, a page at a time, until a listing
// finds none (true), or the step's units or maxAbortsPerStep are spent, or
// a page held only uploads already gone (false). A service that does not
// implement multipart listings has none. An upload already gone
// (NoSuchUpload: aborted by its client meanwhile, or a server that lists
// what it no longer holds) spends a unit but is not counted as removed,
// so a server listing the same gone uploads again and again shows a step
// without progress rather than one that removed thousands.
func (d *drain) abortUploads(ctx context.Context) (bool, error) {
	aborts := 0
	for d.left > 0 && aborts < maxAbortsPerStep && !d.halt() {
		rctx, cancel := d.request(ctx)
		out, err := d.cl.ListMultipartUploads(rctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(d.bucket), MaxUploads: aws.Int32(min(d.page(), int32(maxAbortsPerStep-aborts)))})
		cancel()
		if isNotImplemented(err) {
			return true, nil
		}
		if err != nil {
			return false, d.b.classify(fmt.Errorf("list multipart uploads of %s: %w", d.bucket, err))
		}
		if len(out.Uploads) == 0 {
			return true, nil
		}
		removed := 0
		for _, u := range out.Uploads[:min(len(out.Uploads), d.left, maxAbortsPerStep-aborts)] {
			if d.halt() {
				return false, nil
			}
			rctx, cancel := d.request(ctx)
			_, err := d.cl.AbortMultipartUpload(rctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(d.bucket), Key: u.Key, UploadId: u.UploadId})
			cancel()
			gone := isCode(err, "NoSuchUpload")
			if err != nil && !gone {
				return false, d.b.classify(fmt.Errorf("abort multipart upload %s of %s: %w", aws.ToString(u.Key), d.bucket, err))
			}
			d.left--
			aborts++
			if !gone {
				removed++
				d.step.Deleted.Objects++
			}
		}
		if removed == 0 {
			return false, nil
		}
	}
	return false, nil
}

// deleteVersions deletes object versions and delete markers (current
// objects where the service implements no versions), a page and one
// DeleteObjects request at a time, until a listing finds none (true) or
// the step's units are spent (false).
//
// A DeleteObjects request that runs out of requestTimeout halves the batch
// (deleteBatch), once per step: the step lists again and goes on with the
// smaller batch, and a second timeout is the step's error, which the
// next step, smaller again, retries.
func (d *drain) deleteVersions(ctx context.Context) (bool, error) {
	shrunk := false
	for d.left > 0 && !d.halt() {
		ids, sizes, truncated, err := d.list(ctx, max(int(d.page()), len(d.lost)))
		if err != nil {
			return false, err
		}
		d.settle(ids, truncated)
		if len(ids) == 0 {
			return !truncated, nil
		}
		if n := min(d.left, d.batch); len(ids) > n {
			if n <= 0 {
				return false, nil
			}
			ids, sizes, truncated = ids[:n], sizes[:n], true
		}
		d.listedToEnd = !truncated
		rctx, cancel := d.request(ctx)
		start := time.Now()
		res, err := d.cl.DeleteObjects(rctx, &s3.DeleteObjectsInput{Bucket: aws.String(d.bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		cancel()
		if err != nil && timedOut(ctx, err) && len(ids) > 1 && !shrunk {
			// The request, not the caller, ran out of time: the server is
			// slower than requestTimeout per len(ids) entries. Halve the
			// batch for this and later steps and list again: what the
			// server deleted before the answer was lost no longer lists,
			// and settle counts it.
			d.batch = d.b.deleteBatch.shrink(len(ids))
			d.listedToEnd, shrunk = false, true
			d.lost = d.lost[:0]
			for i, id := range ids {
				d.lost = append(d.lost, entry{id, sizes[i]})
			}
			continue
		}
		if err != nil {
			return false, d.b.classify(fmt.Errorf("delete objects of %s: %w", d.bucket, err))
		}
		if len(ids) == d.batch && time.Since(start) < d.b.cfg.timeout()/4 {
			d.batch = d.b.deleteBatch.grow(len(ids), int(d.b.cfg.deleteSlice()))
		}
		failed := map[string]bool{}
		for _, e := range res.Errors {
			failed[aws.ToString(e.Key)+"\x00"+aws.ToString(e.VersionId)] = true
		}
		for i, id := range ids {
			if !failed[aws.ToString(id.Key)+"\x00"+aws.ToString(id.VersionId)] {
				d.step.Deleted.Objects++
				d.step.Deleted.Bytes += sizes[i]
			}
		}
		d.left -= len(ids)
		if len(res.Errors) > 0 {
			e := res.Errors[0]
			return false, fmt.Errorf("delete objects of %s: %d of %d failed, first %s (version %s): %s %s", d.bucket, len(res.Errors), len(ids),
				aws.ToString(e.Key), aws.ToString(e.VersionId), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return false, nil
}

// list is the first page, of page entries, of the bucket's object versions
// and delete markers, with each one's size (0 for a marker), or of its current
// objects where the service implements no versions (VersityGW without a
// versioning directory).
func (d *drain) list(ctx context.Context, page int) (ids []types.ObjectIdentifier, sizes []int64, truncated bool, err error) {
	var out *s3.ListObjectVersionsOutput
	if !d.noVersions {
		rctx, cancel := d.request(ctx)
		out, err = d.cl.ListObjectVersions(rctx, &s3.ListObjectVersionsInput{Bucket: aws.String(d.bucket), MaxKeys: aws.Int32(int32(page))})
		cancel()
		d.noVersions = isNotImplemented(err)
	}
	switch {
	case d.noVersions:
		rctx, cancel := d.request(ctx)
		lo, err := d.cl.ListObjectsV2(rctx, &s3.ListObjectsV2Input{Bucket: aws.String(d.bucket), MaxKeys: aws.Int32(int32(page))})
		cancel()
		if err != nil {
			return nil, nil, false, d.b.classify(fmt.Errorf("list objects of %s: %w", d.bucket, err))
		}
		for _, o := range lo.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
			sizes = append(sizes, aws.ToInt64(o.Size))
		}
		truncated = aws.ToBool(lo.IsTruncated)
	case err != nil:
		return nil, nil, false, d.b.classify(fmt.Errorf("list object versions of %s: %w", d.bucket, err))
	default:
		for _, v := range out.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
			sizes = append(sizes, aws.ToInt64(v.Size))
		}
		for _, m := range out.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
			sizes = append(sizes, 0)
		}
		truncated = aws.ToBool(out.IsTruncated)
	}
	return ids, sizes, truncated, nil
}

// batchSize is the most entries one DeleteObjects request holds, shared by
// a backend's steps: 0 until a request timed out, then halved for each
// timeout (to 1 at least) and doubled after growAfter full batches in a
// row answered in a quarter of requestTimeout, until it is the configured
// slice again. A server that is slow under load (VersityGW's posix
// versions, a busy disk) is asked for less per request rather than timed
// out forever, and one that chokes above some size costs a timeout every
// growAfter batches, not every other one.
type batchSize struct {
	mu   sync.Mutex
	n    int
	fast int
}

// growAfter is how many quick full batches in a row double the batch.
const growAfter = 10

// get is the batch a step starts with: the configured slice, or less
// after timeouts.
func (s *batchSize) get(slice int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 || s.n > slice {
		return slice
	}
	return s.n
}

// shrink records that a request of sent entries timed out, and returns
// the batch to use now: half of it.
func (s *batchSize) shrink(sent int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	half := max(sent/2, 1)
	if s.n == 0 || half < s.n {
		s.n = half
	}
	s.fast = 0
	return s.n
}

// grow records that a request of sent entries, a full batch, answered
// quickly, and returns the batch to use now: twice it once growAfter
// did in a row, up to slice.
func (s *batchSize) grow(sent, slice int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		return slice
	}
	if sent >= s.n {
		if s.fast++; s.fast >= growAfter {
			s.n, s.fast = min(s.n*2, slice), 0
		}
	}
	if s.n >= slice {
		s.n = 0
		return slice
	}
	return s.n
}

// timedOut reports whether err is a request's own timeout while the
// caller's ctx still has time.
func timedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
}
