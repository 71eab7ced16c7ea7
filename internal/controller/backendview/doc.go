// Package backendview writes the BucketyBackend objects: one per backend of
// buckety-controller.yaml, so that `kubectl get bucketybackends` tells a
// tenant and a platform engineer which backends exist, what they are,
// whether they answer (Ready) and whether one that answers has a setting
// its operator should fix (Degraded, from the probe's warnings), without
// reading the controller's config or its metrics.
//
// The view is not a second source of truth. Everything in it is derived,
// every probe round, from the config (driver, implementation, service,
// limits, adoption), from the backend (a cheap read, drivers.Prober, what
// it warned of, drivers.Warner, and whether it issues keys per access,
// drivers.CredentialIssuer) and from the controller's cache (how many
// Bucketies and accesses it holds). The
// leader alone writes it; an edit by anyone else is overwritten at the
// next round, and objects whose backend left the config are deleted.
//
// Writes are bounded: a round writes an object only when something a
// reader sees changed (a condition, a count, keys per access), and
// otherwise refreshes lastProbeTime once per HeartbeatProbes rounds, so an
// idle installation costs one write per backend every five minutes at the
// default interval, while a backend that stops answering is written at the
// first probe that fails. The metrics (buckety_backend_up,
// buckety_backend_degraded, the probe count and timestamp) carry every
// probe; status.probes numbers the probe a write holds, so a reader can
// tell which probe wrote what.
package backendview
