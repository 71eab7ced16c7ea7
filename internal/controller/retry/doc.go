// Package retry is when a reconcile runs again: the per-object backoff by
// kind of failure (Backoff, Failure), a backend's failures over one pass
// (BackendFailure), jitter for periodic re-checks, and the objects waiting
// for something another object releases (Waiters).
package retry
