package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"

	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// BinDirEnv names the environment variable holding the directory of the
// pinned etcd, kube-apiserver, kube-controller-manager and kubectl binaries.
// `make test` sets it from test/tools/install.sh.
const BinDirEnv = "BUCKETY_KUBE_BIN"

// Options configure a control plane.
type Options struct {
	// BinDir holds the binaries; empty means $BUCKETY_KUBE_BIN.
	BinDir string
	// Dir holds data, certificates, kubeconfig and logs/.
	Dir string
	// ControllerManager also starts kube-controller-manager with the
	// garbage-collector, namespace, serviceaccount and clusterrole-aggregation
	// controllers.
	ControllerManager bool
	// CRDDirs are directories of CustomResourceDefinition YAML to install.
	CRDDirs []string
	// Detached starts processes in their own session with pid files under
	// Dir/pids, so they outlive this process (the quick start).
	Detached bool
	// Node prepares the control plane for a kubelet: every default
	// controller in kube-controller-manager (implies ControllerManager),
	// kube-scheduler, CSR signing with the CA, and a client certificate for
	// the apiserver to reach the kubelet, which it finds by hostname.
	Node bool
}

// ControlPlane is a running control plane.
type ControlPlane struct {
	Dir string
	// URL is the apiserver's https URL on 127.0.0.1.
	URL string
	// Kubeconfig is the path of an admin kubeconfig (group system:masters).
	Kubeconfig string
	// RESTConfig is the admin client configuration.
	RESTConfig *rest.Config
	// CA signed the apiserver's serving certificate and is trusted for
	// client certificates.
	CA *pki.CA
	// BinDir holds the binaries the control plane runs from.
	BinDir string

	procs []*proc.Process
}

// processNames are the components in start order; stop runs in reverse.
var processNames = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// ResolveBinDir returns the binary directory from opts or the environment,
// checking that the binaries are there.
func ResolveBinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(BinDirEnv)
	}
	if dir == "" {
		return "", fmt.Errorf("%s is not set: run `make test`, or export %s=$(dirname $(test/tools/install.sh kube-apiserver etcd kubectl kube-controller-manager | head -1))", BinDirEnv, BinDirEnv)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", fmt.Errorf("%s=%s: %w", BinDirEnv, dir, err)
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(abs, b)); err != nil {
			return "", fmt.Errorf("%s=%s has no %s: build it with test/tools/install.sh %s", BinDirEnv, dir, b, b)
		}
	}
	return abs, nil
}

// Start starts etcd and kube-apiserver (and kube-controller-manager when
// asked), waits until the apiserver is ready, and installs the CRDs. On error
// everything started is stopped.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	bin, err := ResolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"pki", "etcd", "pids"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	cp = &ControlPlane{Dir: dir, BinDir: bin}
	defer func() {
		if err != nil {
			if serr := cp.Stop(); serr != nil {
				err = errors.Join(err, serr)
			}
			cp = nil
		}
	}()

	ca, err := pki.NewCA("buckety-test-ca")
	if err != nil {
		return nil, err
	}
	cp.CA = ca
	pki := filepath.Join(dir, "pki")
	servingCert, servingKey, err := ca.Issue("kube-apiserver", nil,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	token := randomToken()
	files := map[string][]byte{
		"ca.crt":        ca.CertPEM,
		"ca.key":        caKey,
		"apiserver.crt": servingCert,
		"apiserver.key": servingKey,
		"tokens.csv":    []byte(token + ",buckety-admin,buckety-admin,system:masters\n"),
		"admin.token":   []byte(token),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(pki, name), content, 0o600); err != nil {
			return nil, err
		}
	}
	saPub, saKey, err := serviceAccountKey(pki)
	if err != nil {
		return nil, err
	}

	ports, err := proc.FreePorts(5)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	var nodeArgs []string
	if opts.Node {
		opts.ControllerManager = true
		crt, key, err := ca.Issue("kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil, 24*time.Hour)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(pki, "kubelet-client.crt"), crt, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(pki, "kubelet-client.key"), key, 0o600); err != nil {
			return nil, err
		}
		nodeArgs = []string{
			"--kubelet-preferred-address-types=Hostname,InternalIP",
			"--kubelet-client-certificate=" + filepath.Join(pki, "kubelet-client.crt"),
			"--kubelet-client-key=" + filepath.Join(pki, "kubelet-client.key"),
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	if err := cp.start(opts.Detached, "etcd", filepath.Join(bin, "etcd"), []string{
		"--name=default",
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
		"--unsafe-no-fsync=true", "--log-level=warn",
		// 8 GiB, etcd's largest recommended database, in place of its 2 GiB
		// default: make bench-scale-100k holds 100,000 Bucketies with their
		// accesses, Secrets and claims, as a cluster of that size would be
		// configured to. Small clusters never come near either.
		"--quota-backend-bytes=8589934592",
	}); err != nil {
		return nil, err
	}

	cp.URL = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	if err := cp.start(opts.Detached, "kube-apiserver", filepath.Join(bin, "kube-apiserver"), append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + filepath.Join(pki, "apiserver.crt"), "--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
		"--token-auth-file=" + filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		// BUCKETY_APISERVER_PROFILING=1 serves /debug/pprof to admins, to
		// see where a benchmark spends the API server's CPU.
		"--profiling=" + strconv.FormatBool(os.Getenv("BUCKETY_APISERVER_PROFILING") == "1"),
		"--v=1",
	}, nodeArgs...)); err != nil {
		return nil, err
	}
	if err := cp.writeKubeconfig(token); err != nil {
		return nil, err
	}
	if err := cp.waitReady(ctx, token, 90*time.Second); err != nil {
		return nil, err
	}
	if opts.ControllerManager {
		controllers := "garbage-collector-controller,namespace-controller,serviceaccount-controller,clusterrole-aggregation-controller"
		var extra []string
		if opts.Node {
			controllers = "*"
			extra = []string{"--cluster-signing-cert-file=" + filepath.Join(pki, "ca.crt"), "--cluster-signing-key-file=" + filepath.Join(pki, "ca.key")}
		}
		if err := cp.start(opts.Detached, "kube-controller-manager", filepath.Join(bin, "kube-controller-manager"), append([]string{
			"--kubeconfig=" + cp.Kubeconfig,
			"--authentication-kubeconfig=" + cp.Kubeconfig, "--authorization-kubeconfig=" + cp.Kubeconfig,
			"--controllers=" + controllers,
			"--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(kcmPort),
			"--cert-dir=" + filepath.Join(pki, "kcm"),
			"--root-ca-file=" + filepath.Join(pki, "ca.crt"),
			"--service-account-private-key-file=" + saKey,
			"--use-service-account-credentials=false",
			"--v=1",
		}, extra...)); err != nil {
			return nil, err
		}
	}
	if opts.Node {
		if err := cp.start(opts.Detached, "kube-scheduler", filepath.Join(bin, "kube-scheduler"), []string{
			"--kubeconfig=" + cp.Kubeconfig,
			"--authentication-kubeconfig=" + cp.Kubeconfig, "--authorization-kubeconfig=" + cp.Kubeconfig,
			"--leader-elect=false",
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedPort),
			"--v=1",
		}); err != nil {
			return nil, err
		}
	}
	if len(opts.CRDDirs) > 0 {
		if err := cp.InstallCRDs(ctx, opts.CRDDirs...); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

func (cp *ControlPlane) start(detached bool, name, bin string, args []string) error {
	p, err := proc.Start(cp.Dir, name, bin, args, nil, detached)
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, p)
	return nil
}

// Processes returns the running components.
func (cp *ControlPlane) Processes() []*proc.Process { return cp.procs }

func (cp *ControlPlane) writeKubeconfig(token string) error {
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["buckety"] = &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthorityData: cp.CA.CertPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["buckety"] = &clientcmdapi.Context{Cluster: "buckety", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "buckety"
	if err := clientcmd.WriteToFile(*cfg, cp.Kubeconfig); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = 200, 400
	cp.RESTConfig = rc
	return nil
}

// waitReady polls /readyz until it answers 200, failing fast with the log of
// a component that exited.
func (cp *ControlPlane) waitReady(ctx context.Context, token string, timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AddCert(cp.CA.Cert)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(timeout)
	var last string
	for {
		for _, p := range cp.procs {
			if done, err := p.Exited(); done {
				return fmt.Errorf("%s exited (%v) before the apiserver was ready; last lines of %s:\n%s", p.Name, err, p.Log, p.Tail(20))
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.URL+"/readyz", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready after %s (last: %s); see %s", timeout, last, filepath.Join(cp.Dir, "logs"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Kubectl returns a kubectl command against this control plane.
func (cp *ControlPlane) Kubectl(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(cp.BinDir, "kubectl"), append([]string{"--kubeconfig=" + cp.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig)
	return cmd
}

// Stop stops every component in reverse start order.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for i := len(cp.procs) - 1; i >= 0; i-- {
		if err := cp.procs[i].Stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(proc.PidFile(cp.Dir, cp.procs[i].Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	cp.procs = nil
	return errors.Join(errs...)
}

// StopDetached stops the components of a detached control plane in dir by
// their pid files.
func StopDetached(dir string) error {
	var errs []error
	for i := len(processNames) - 1; i >= 0; i-- {
		if err := proc.StopDetached(dir, processNames[i], 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DetachedStatus reports, per component, whether the detached control plane
// in dir is running it.
func DetachedStatus(dir string) map[string]bool {
	out := map[string]bool{}
	for _, n := range processNames {
		if up, recorded := proc.Running(dir, n); recorded {
			out[n] = up
		}
	}
	return out
}

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
