// Package scale is buckety's scale benchmark (`make bench-scale`, issue 16).
// A platform team's first request is a big one ("provision our 800
// topics"), and what decides whether buckety copes is not a unit test's
// timing but the whole system's: the API server's write rate, the client's
// limiter, how many Kafka requests a topic costs, and memory with a
// cluster's worth of Secrets. So the benchmark runs the real parts only —
// the no-root control plane (test/controlplane), the request-counting
// Kafka-protocol broker process (test/kafka), MinIO and SeaweedFS
// (test/s3), and the buckety-controller and buckety-webhook binaries built
// from the tree under test and running under their generated RBAC
// (test/harness) — and prints
// one table of figures, each next to its goal and, where the API server
// bounds it, as a ratio to the API server's own floor measured in the same
// run.
//
// It is a benchmark, not a timed test: goals are reported, never asserted.
// Correctness is asserted (every Buckety Ready, every Secret present with
// the right keys, every out-of-band change actually reverted), so it can
// fail. `make test` runs a bounded small-N version to keep it working; see
// scale_test.go for the knobs.
//
// The same package holds the comparison with a peer (`make bench-peers`,
// issue 36, peers_test.go): buckety and crossplane-contrib/provider-kafka,
// built from a source tree the caller provides, on one control plane and
// one counting broker, interleaved, every figure a ratio to the peer's. An
// absolute time from this machine says little; the same workload on the
// same parts, run by both in turn, says how far apart they are. It shares
// the environment, the counters and the checks above, so both are measured
// the same way.
package scale
