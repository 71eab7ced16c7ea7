package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
)

// Attach returns the detached control plane that an earlier process started
// in dir, so a later one can carry on with it: every component in want (and
// every other component with a pid file) must still run the binary it was
// started from, and the API server must answer /readyz with the admin
// token. Otherwise the error says what is missing, and the caller starts
// over (StopDetached, then Start). Attach starts and stops nothing.
func Attach(ctx context.Context, dir string, want ...string) (*ControlPlane, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if len(want) == 0 {
		want = []string{"etcd", "kube-apiserver"}
	}
	status := DetachedStatus(dir)
	var missing []string
	for _, n := range want {
		if !status[n] {
			missing = append(missing, n)
		}
	}
	for _, n := range processNames {
		if up, recorded := status[n]; recorded && !up && !contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not running: %s", strings.Join(missing, ", "))
	}
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, "pki", name)) }
	caCert, err := read("ca.crt")
	if err != nil {
		return nil, err
	}
	caKey, err := read("ca.key")
	if err != nil {
		return nil, err
	}
	ca, err := pki.LoadCA(caCert, caKey)
	if err != nil {
		return nil, err
	}
	token, err := read("admin.token")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: dir, CA: ca, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	rc, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 200, 400
	cp.RESTConfig, cp.URL = rc, rc.Host
	if cp.BinDir, err = binDirOf(dir); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx, strings.TrimSpace(string(token)), 10*time.Second); err != nil {
		return nil, err
	}
	return cp, nil
}

// binDirOf is the directory of the kube-apiserver binary the detached
// control plane in dir runs, from its pid file.
func binDirOf(dir string) (string, error) {
	b, err := os.ReadFile(proc.PidFile(dir, "kube-apiserver"))
	if err != nil {
		return "", err
	}
	_, bin, ok := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if !ok {
		return "", fmt.Errorf("%s: malformed pid file", proc.PidFile(dir, "kube-apiserver"))
	}
	return filepath.Dir(bin), nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
