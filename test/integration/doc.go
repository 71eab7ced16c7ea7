// Package integration tests buckety-controller end to end below the Pod
// level: a real kube-apiserver with kube-controller-manager, the real
// drivers, a real Kafka-protocol broker and a real MinIO, and the controller
// running in-process (or as its built binary where the test is about the
// binary: versions stamped with -ldflags, RBAC).
package integration
