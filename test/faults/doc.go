// Package faults is buckety's standing fault harness. A platform team adopts
// a controller for what it survives, so the harness breaks things on purpose
// against real parts only — a real kube-apiserver (test/controlplane), the
// Kafka-protocol broker process (test/kafka), a real S3 server (test/s3:
// MinIO, or VersityGW or SeaweedFS with FAULTS_S3) and the built
// buckety-controller binary running under its generated RBAC — and
// prints one table of figures: an inventory of what exists at the end,
// compared with what should exist, in the spirit of Jepsen's checks.
//
// Each run is bounded in time and count, seeded (the seed is printed; set
// FAULTS_SEED to replay it) and loopback-only. `make test` runs a small
// version; `make faults` runs the sizes of issue 15. See faults_test.go for
// the knobs.
package faults
