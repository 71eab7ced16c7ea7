package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Namespace kube-system is read with the get on namespaces the buckety
// reconciler's marker grants (for limits.namespaces selectors).

// defaultInstallation is the installation name of a config that sets none:
// "cluster-" and 12 hex digits of the SHA-256 of namespace kube-system's
// UID, which is stable for the life of a cluster and differs between
// clusters. A cluster rebuilt from git gets a new one, so its owner
// records name a new installation: disaster recovery needs the name set
// in buckety-controller.yaml (docs/operations.md).
func defaultInstallation(ctx context.Context, r client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, client.ObjectKey{Name: "kube-system"}, ns); err != nil {
		return "", fmt.Errorf("installation is not set in buckety-controller.yaml, and its default (from namespace kube-system's UID) could not be read: %w", err)
	}
	return InstallationFromUID(string(ns.UID)), nil
}

// InstallationFromUID is the default installation name for a cluster whose
// namespace kube-system has uid.
func InstallationFromUID(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return "cluster-" + hex.EncodeToString(sum[:6])
}
