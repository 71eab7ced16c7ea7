package drivers

import "context"

// Drainer is an optional capability of a Backend: emptying a resource and
// keeping it (Buckety spec.drain), as StorageGrid's bucket drain does for
// buckets and DeleteRecords up to the high watermark does for a topic.
// The controller calls Drain once per drain pass until a step reports
// Done; a drain is cancelled by no longer calling it. Drain keeps no
// state between calls: a controller that crashed mid-drain calls it
// again and it continues from what the resource holds.
type Drainer interface {
	// Drain makes one bounded step of emptying r (the desired state, as
	// Ensure gets it): at most DrainLimits.Units deletions (an S3 bucket:
	// object versions, delete markers and multipart uploads, removed in
	// DeleteObjects batches of up to 1,000; a topic: one DeleteRecords
	// up to each partition's high watermark, whatever Units says), so
	// that a resource with a million objects never holds a worker. It
	// never deletes the resource itself, nor changes its configuration
	// (versioning, policies, tags and owner records stay). A missing
	// resource is an error that names it.
	Drain(ctx context.Context, r Resource, limits DrainLimits) (DrainStep, error)
}

// DrainLimits bounds one Drain step.
type DrainLimits struct {
	// Units is the most objects (versions, delete markers, uploads) one
	// step deletes; 0: the driver's default (10,000 on S3).
	Units int
	// CountAhead is how many more entries a step that stopped at its
	// Units may list, without deleting them, to tell its Remaining; 0:
	// none. A driver that knows Remaining anyway (a topic's watermarks)
	// ignores it. The controller asks for it on a drain's first step, so
	// that status.drain.initial is exact for all but the largest buckets
	// at a bounded cost (one listing per 1,000 entries, once).
	CountAhead int
	// Stop, when set, is asked before each batch of deletions (each
	// listing page a step deletes, each upload it aborts): true ends the
	// step there, with what it deleted so far and Done false. The
	// controller's says whether the drain was called off since the step
	// began, so a cancel stops a step of many batches within one, rather
	// than letting it delete what the tenant writes meanwhile.
	Stop func() bool
}

// DrainStep is what one Drain step did and found.
type DrainStep struct {
	// Deleted is what this step removed.
	Deleted Content
	// Remaining is what the resource held after this step, where the
	// driver could tell without further requests (Known false otherwise):
	// a topic's records between its low and high watermarks; a bucket
	// whose listing the step finished.
	Remaining Content
	// Done is true when the step found the resource empty: no object
	// version, delete marker or multipart upload left; every partition's
	// low watermark at its high watermark. Content written while a drain
	// runs is drained too; a drain of a resource that keeps receiving
	// writes is done once a step finds it empty.
	Done bool
	// Requests is how many requests the step made to the service, for the
	// drain figures.
	Requests int
}

// Content is an amount a resource holds or a drain removed.
type Content struct {
	// Known is false when the figures could not be told.
	Known bool
	// Objects: a bucket's objects (versions, delete markers and uploads
	// when drained); a topic's records (high minus low watermark, summed
	// over its partitions).
	Objects int64
	// Bytes: a bucket's object bytes; a topic's log bytes where the step
	// measured them (0 otherwise).
	Bytes int64
}
