// Package controlplane runs a real Kubernetes control plane on loopback for
// tests and for the local quick start: etcd, kube-apiserver (RBAC, token
// authentication, service-account signing) and, when asked,
// kube-controller-manager for owner-reference garbage collection and
// namespace deletion, which kube-apiserver alone does not do.
//
// The binaries are the pinned ones test/tools/install.sh builds; nothing is
// downloaded at test time. Every process is started by this package, tracked
// by PID, bound to 127.0.0.1 on a free port, and stopped by PID: in tests
// through t.Cleanup (and a parent-death signal, so a killed test binary
// leaves nothing behind), in the quick start through pid files that `down`
// reads.
package controlplane
