package drivers

import (
	"context"
	"time"
)

// UsageReporter is an optional capability of a Backend: measuring how much
// its resources hold, for status.usage, the usage metrics and the soft
// quota. The controller calls it once per usage interval per backend with
// every resource the backend holds claims for.
type UsageReporter interface {
	// Usage measures every resource in rs (the desired state, as Ensure
	// gets it) and returns one Usage per resource, in the order of rs.
	// Where the service can answer for many resources at once (Kafka's
	// DescribeLogDirs and ListOffsets for a whole cluster, MinIO's data
	// usage report) the number of requests does not grow with len(rs)
	// beyond the service's own per-request limits. A Usage with Known
	// false says the service cannot tell (a missing resource, an
	// implementation without a usage report); an error means the
	// measurement as a whole failed and nothing is reported.
	Usage(ctx context.Context, rs []Resource) ([]Usage, error)
}

// Usage is what a resource holds, as its service reports it.
type Usage struct {
	// Known is false when the service could not tell; the other fields
	// are then zero.
	Known bool
	// Bytes stored: a bucket's object bytes; a topic's log bytes summed
	// over its partitions (one replica each, as retention.bytes counts).
	Bytes int64
	// Objects in a bucket; 0 for a topic.
	Objects int64
	// Partitions of a topic; 0 for a bucket.
	Partitions int64
	// EndOffsets is a topic's end offsets summed over its partitions: the
	// records ever written (minus none: deleted records keep their
	// offsets); 0 for a bucket.
	EndOffsets int64
	// MeasuredAt is when the service measured it: now for a direct
	// measurement, or the time of the service's own report (MinIO's
	// scanner runs on its own schedule).
	MeasuredAt time.Time
	// Source names how it was measured, for status and docs: "DescribeLogDirs",
	// "minio data usage", "ListObjectsV2", "ListObjectVersions".
	Source string
}

// Footprint is what a resource counts against its namespace's budget on
// a backend (config limits), derived from its parameters alone so the
// webhook, which has no connection to the service, reaches the same
// figure as the controller.
type Footprint struct {
	// Partitions of a topic (0 for a bucket). -1 when the parameters
	// leave the count to the broker's default, which they cannot tell
	// (num.partitions may be anything): unbounded.
	Partitions int64
	// DiskBytes a topic may hold: what each partition may keep beyond its
	// retention (retention.bytes plus its active segment, segment.bytes),
	// times partitions. -1 when unbounded (DiskUnboundedBy says which
	// parameter). 0 for a bucket.
	DiskBytes int64
	// DiskUnboundedBy is the parameter whose value (or absence) makes
	// DiskBytes unbounded, "" when it is bounded.
	DiskUnboundedBy string
	// DiskRefused are parameters, with why, that would let the resource
	// hold disk DiskBytes does not count (deleted segments kept for long,
	// index files grown past their default): refused under a disk budget.
	DiskRefused map[string]string
	// QuotaBytes is a bucket's hard quota, -1 when the bucket has none. 0
	// for a topic.
	QuotaBytes int64
	// SoftQuotaBytes is the usage above which the resource reports
	// QuotaWarning (0: none). A driver may default it from the hard quota.
	SoftQuotaBytes int64
}

// FootprintMeasurer is implemented by a Driver whose resources count
// against byte or partition budgets, or carry a quota the controller
// watches usage against.
type FootprintMeasurer interface {
	// Footprint derives a resource's footprint from its (valid)
	// parameters and the backend's options.
	Footprint(cfg Config, params map[string]string) Footprint
}
