package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// KillAPIServer crashes kube-apiserver with SIGKILL; etcd and the other
// components keep running. RestartAPIServer brings it back.
func (cp *ControlPlane) KillAPIServer() error {
	for _, p := range cp.procs {
		if p.Name == "kube-apiserver" {
			return p.Kill()
		}
	}
	return fmt.Errorf("kill: no kube-apiserver in this control plane")
}

// RestartAPIServer starts a killed kube-apiserver again with the same flags
// (same port, certificates and etcd) and waits until it is ready.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	token, err := os.ReadFile(filepath.Join(cp.Dir, "pki", "admin.token"))
	if err != nil {
		return err
	}
	for i, p := range cp.procs {
		if p.Name != "kube-apiserver" {
			continue
		}
		np, err := p.Respawn()
		if err != nil {
			return err
		}
		cp.procs[i] = np
		return cp.waitReady(ctx, string(token), 90*time.Second)
	}
	return fmt.Errorf("restart: no kube-apiserver in this control plane")
}
