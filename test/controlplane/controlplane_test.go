package controlplane_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TestGarbageCollectionAndNamespaceDeletion proves the controller-manager
// half: owner-reference GC (what reclaims the implicit access's Secret) and
// namespace deletion.
func TestGarbageCollectionAndNamespaceDeletion(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{ControllerManager: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig)

	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gc"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := cs.CoreV1().ConfigMaps("gc").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Secrets("gc").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name:            "owned",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps("gc").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Secrets("gc").Get(ctx, "owned", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("want the owned Secret garbage-collected, got %v", err)
	}

	if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("want namespace gc deleted, got %v", err)
	}
}

// TestDetachedUpDown starts a detached control plane the way the quick start
// does, then stops it from the pid files alone.
func TestDetachedUpDown(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs the real control plane; run without -short (make test)")
	}
	dir, err := os.MkdirTemp("", "bkt-det-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir, Detached: true, CRDDirs: []string{controlplane.CRDDir()}})
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, p := range cp.Processes() {
		pids[p.Name] = p.PID()
	}
	// Whatever happens below, nothing stays running.
	t.Cleanup(func() {
		if err := controlplane.StopDetached(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	st := controlplane.DetachedStatus(dir)
	if !st["etcd"] || !st["kube-apiserver"] {
		t.Fatalf("want etcd and kube-apiserver running, got %v", st)
	}
	if err := controlplane.StopDetached(dir); err != nil {
		t.Fatalf("StopDetached: %v", err)
	}
	for name, pid := range pids {
		if _, err := os.Stat(filepath.Join("/proc", itoa(pid), "exe")); err == nil {
			if exe, _ := os.Readlink(filepath.Join("/proc", itoa(pid), "exe")); filepath.Dir(exe) == cp.BinDir {
				t.Errorf("%s (pid %d) still running after StopDetached", name, pid)
			}
		}
	}
	if st := controlplane.DetachedStatus(dir); st["etcd"] || st["kube-apiserver"] {
		t.Errorf("want nothing running after StopDetached, got %v", st)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
