package drivers

import "context"

// Sweeper is an optional capability of a Backend: judging many resources
// for drift at once. A periodic re-check that calls Ensure per resource
// costs requests per resource; a service whose API answers about many
// resources in one request (Kafka's Metadata and DescribeConfigs, S3's
// ListBuckets) can say which of thousands drifted in a handful of requests,
// so the controller re-checks only those with Ensure.
//
// A Sweep reads and never writes. Its verdict must be the one Ensure would
// reach: a driver keeps one comparison of desired and actual state and uses
// it in both, so that a sweep never reports drift Ensure would not repair
// (the resource would be re-checked every sweep for nothing) and never
// misses drift Ensure would repair.
type Sweeper interface {
	// Sweep judges every resource in rs (the desired state, as Ensure would
	// get it) with a number of requests that does not grow with len(rs)
	// beyond the service's own per-request limits. It returns one verdict
	// per resource, in the order of rs. An error means the sweep as a whole
	// failed (the service could not be reached): nothing was judged.
	Sweep(ctx context.Context, rs []Resource) ([]SweepVerdict, error)
	// SweepCoverage says how much of what Ensure checks a Sweep judges.
	SweepCoverage() SweepCoverage
}

// SweepCoverage is how much of Ensure's comparison a driver's Sweep covers.
type SweepCoverage int

const (
	// SweepPartial: a sweep sees some drift (an S3 bucket's existence) but
	// not all (versioning, lifecycle): the controller keeps re-checking
	// each resource at the ordinary re-check interval.
	SweepPartial SweepCoverage = iota
	// SweepComplete: a sweep sees every difference Ensure would act on, so
	// the per-resource re-check is only a long safety net.
	SweepComplete
)

// SweepVerdict is what a Sweep found about one resource.
type SweepVerdict struct {
	// Changes lists what Ensure would write to bring the resource to its
	// parameters, one human-readable line each, as EnsureResult.Changes
	// (a missing resource is one line saying so). Empty: in sync, as far
	// as the sweep sees.
	Changes []string
	// Drift is the drift Ensure would report and not repair (a
	// *DriftError), or nil.
	Drift *DriftError
	// Err is set when the sweep could not judge this resource (the service
	// answered with an error about it); Changes and Drift are then empty.
	Err error
}

// Drifted reports whether Ensure would write something.
func (v SweepVerdict) Drifted() bool { return len(v.Changes) > 0 }
