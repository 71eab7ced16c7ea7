// Package cluster runs a real single-node Kubernetes on this machine without
// Docker: the control plane of package controlplane plus kube-scheduler,
// containerd (Debian), runc, CNI bridge networking and a kubelet, every
// process started here, logged to one directory and tracked by PID.
//
// The facts it relies on were measured on this kind of machine (see the
// engineering notes): containerd 1.6 needs restrict_oom_score_adj and a
// locally built pause image; the kubelet refuses a loopback node IP, so the
// node IP is a /32 on an empty bridge; the apiserver reaches the kubelet by
// hostname, which resolves to 127.0.0.1; Pods that must reach the apiserver
// or backends run with hostNetwork. Down removes every process, mount, link
// and host path it created, so the next run starts clean.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/proc"
)

// Network settings. The node IP is a /32 on an otherwise empty bridge; pod
// traffic never leaves the machine (every buckety Pod uses hostNetwork).
const (
	NodeBridge = "bkt-node0"
	NodeIP     = "100.127.255.254"
	CNIBridge  = "bkt-cni0"
	PodCIDR    = "100.126.0.0/24"
)

// HostPaths are paths containerd 1.6 and the kubelet write regardless of
// configuration; Down removes them.
var HostPaths = []string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet/device-plugins", "/var/log/containers", "/var/log/pods"}

// Debian packages the node needs.
var Packages = []string{"runc", "containerd", "containernetworking-plugins", "iptables", "conntrack", "socat", "iproute2"}

// Cluster is a running node.
type Cluster struct {
	Dir        string
	Kubeconfig string
	CP         *controlplane.ControlPlane
	Containerd string // socket
}

// CheckHost fails unless this is Linux and we are root.
func CheckHost() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("the local node needs Linux (this is %s)", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("the local node needs root: containerd, runc, mounts and network links")
	}
	return nil
}

// EnsurePackages installs the Debian packages the node needs when missing.
func EnsurePackages(log func(string)) error {
	var missing []string
	for _, p := range Packages {
		if exec.Command("dpkg-query", "-W", "-f=${Status}", p).Run() != nil {
			missing = append(missing, p)
			continue
		}
		out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.Contains(string(out), "install ok installed") {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	log("installing Debian packages: " + strings.Join(missing, " "))
	if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %v\n%s", err, out)
	}
	cmd := exec.Command("apt-get", append([]string{"install", "-y", "-qq"}, missing...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %v: %v\n%s", missing, err, out)
	}
	return nil
}

// Up starts the node in dir (detached: it outlives this process) and waits
// until the Node is Ready. binDir holds the Kubernetes binaries.
func Up(ctx context.Context, dir, binDir string, log func(string)) (c *Cluster, err error) {
	if err := CheckHost(); err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := guardHost(dir); err != nil {
		return nil, err
	}
	if err := EnsurePackages(log); err != nil {
		// Nothing started: the record goes, the host stays as it was.
		return nil, errors.Join(err, releaseHost(dir))
	}
	defer func() {
		if err != nil {
			if derr := Down(dir); derr != nil {
				err = errors.Join(err, fmt.Errorf("cleanup: %w", derr))
			}
		}
	}()
	step := func(what string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		log(fmt.Sprintf("%-28s %s", what, time.Since(start).Round(100*time.Millisecond)))
		return nil
	}
	c = &Cluster{Dir: dir, Containerd: filepath.Join(dir, "containerd", "containerd.sock")}
	if err := step("network", func() error { return network() }); err != nil {
		return nil, err
	}
	if err := step("control plane", func() error {
		cp, err := controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(dir, "controlplane"), BinDir: binDir, Detached: true, Node: true, CRDDirs: []string{controlplane.CRDDir()}})
		c.CP = cp
		if cp != nil {
			c.Kubeconfig = cp.Kubeconfig
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := step("containerd", func() error { return c.startContainerd(ctx) }); err != nil {
		return nil, err
	}
	if err := step("pause image", func() error { return c.importPause() }); err != nil {
		return nil, err
	}
	if err := step("kubelet", func() error { return c.startKubelet(binDir) }); err != nil {
		return nil, err
	}
	if err := step("node Ready", func() error { return c.waitNodeReady(ctx, 90*time.Second) }); err != nil {
		return nil, err
	}
	return c, nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// network creates the node bridge with the node IP.
func network() error {
	if !linkExists(NodeBridge) {
		if err := run("ip", "link", "add", NodeBridge, "type", "bridge"); err != nil {
			return err
		}
	}
	if err := run("ip", "addr", "replace", NodeIP+"/32", "dev", NodeBridge); err != nil {
		return err
	}
	return run("ip", "link", "set", NodeBridge, "up")
}

func (c *Cluster) startContainerd(ctx context.Context) error {
	d := filepath.Join(c.Dir, "containerd")
	cni := filepath.Join(c.Dir, "cni")
	for _, p := range []string{d, filepath.Join(cni, "conf"), filepath.Join(cni, "ipam")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	conf := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  disable_apparmor = true
  restrict_oom_score_adj = true
  systemd_cgroup = false
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  # Images are imported, never pulled: a pull of a missing image fails at
  # once on loopback instead of reaching out to a registry.
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."ghcr.io"]
    endpoint = ["http://127.0.0.1:9"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["http://127.0.0.1:9"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."gcr.io"]
    endpoint = ["http://127.0.0.1:9"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."registry.local"]
    endpoint = ["http://127.0.0.1:9"]
`, filepath.Join(d, "root"), filepath.Join(d, "state"), c.Containerd, c.Containerd+".ttrpc", filepath.Join(d, "opt"), PauseImage, filepath.Join(cni, "conf"))
	if err := os.WriteFile(filepath.Join(d, "config.toml"), []byte(conf), 0o644); err != nil {
		return err
	}
	cniConf := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "buckety",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": %q}]], "dataDir": %q}}
  ]
}
`, CNIBridge, PodCIDR, filepath.Join(cni, "ipam"))
	if err := os.WriteFile(filepath.Join(cni, "conf", "10-buckety.conflist"), []byte(cniConf), 0o644); err != nil {
		return err
	}
	p, err := proc.Start(c.Dir, "containerd", "/usr/bin/containerd", []string{"--config", filepath.Join(d, "config.toml")}, nil, true)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := c.ctr("version"); err == nil {
			return nil
		}
		if done, err := p.Exited(); done {
			return fmt.Errorf("containerd exited (%v):\n%s", err, p.Tail(20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd not answering after 30s; see %s", p.Log)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ctr runs ctr against this node's containerd in the CRI namespace.
func (c *Cluster) ctr(args ...string) error {
	return run("ctr", append([]string{"--address", c.Containerd, "-n", "k8s.io"}, args...)...)
}

// ImportImage imports a docker or OCI tarball into the node.
func (c *Cluster) ImportImage(tarPath string, extra ...string) error {
	return c.ctr(append(append([]string{"images", "import"}, extra...), tarPath)...)
}

// ImportOCILayout imports an OCI layout (all platforms) and also names the
// image by its digest reference, so Pods can use repo@sha256:... with
// imagePullPolicy IfNotPresent and never pull.
func (c *Cluster) ImportOCILayout(layoutDir, taggedRef, digestRef string) error {
	tarPath := layoutDir + ".tar"
	if err := OCIArchive(layoutDir, tarPath); err != nil {
		return err
	}
	defer os.Remove(tarPath)
	if err := c.ImportImage(tarPath, "--all-platforms"); err != nil {
		return err
	}
	if err := c.ctr("images", "rm", digestRef); err != nil && !strings.Contains(err.Error(), "not found") {
		return err
	}
	return c.ctr("images", "tag", taggedRef, digestRef)
}

func (c *Cluster) importPause() error {
	tarPath := filepath.Join(c.Dir, "pause.tar")
	if err := GoImage("github.com/Yolean/buckety-controller/test/cluster/pause", PauseImage, tarPath, 65535); err != nil {
		return err
	}
	return c.ImportImage(tarPath)
}

func (c *Cluster) startKubelet(binDir string) error {
	k := filepath.Join(c.Dir, "kubelet")
	if err := os.MkdirAll(filepath.Join(k, "root"), 0o755); err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	ca := c.CP.CA
	crt, key, err := ca.Issue("system:node:"+host, []string{"system:nodes"}, []string{host, "localhost"}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(NodeIP)}, 24*time.Hour)
	if err != nil {
		return err
	}
	files := map[string][]byte{"kubelet.crt": crt, "kubelet.key": key, "ca.crt": ca.CertPEM}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(k, n), b, 0o600); err != nil {
			return err
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.CP.URL, CertificateAuthorityData: ca.CertPEM}
	cfg.AuthInfos["kubelet"] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "kubelet"}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, filepath.Join(k, "kubeconfig")); err != nil {
		return err
	}
	ports, err := proc.FreePorts(2)
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization:
  mode: Webhook
tlsCertFile: %q
tlsPrivateKeyFile: %q
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
makeIPTablesUtilChains: false
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
imageGCHighThresholdPercent: 100
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
podCIDR: %s
maxPods: 60
`, ports[0], ports[1], filepath.Join(k, "ca.crt"), filepath.Join(k, "kubelet.crt"), filepath.Join(k, "kubelet.key"), c.Containerd, PodCIDR)
	if err := os.WriteFile(filepath.Join(k, "config.yaml"), []byte(conf), 0o644); err != nil {
		return err
	}
	_, err = proc.Start(c.Dir, "kubelet", filepath.Join(binDir, "kubelet"), []string{
		"--config=" + filepath.Join(k, "config.yaml"),
		"--kubeconfig=" + filepath.Join(k, "kubeconfig"),
		"--root-dir=" + filepath.Join(k, "root"),
		"--node-ip=" + NodeIP,
		"--v=1",
	}, nil, true)
	return err
}

func (c *Cluster) waitNodeReady(ctx context.Context, timeout time.Duration) error {
	cs, err := kubernetes.NewForConfig(c.CP.RESTConfig)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	last := "no node registered"
	for time.Now().Before(deadline) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil && len(nodes.Items) > 0 {
			for _, cond := range nodes.Items[0].Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == corev1.ConditionTrue {
						return nil
					}
					last = cond.Reason + ": " + cond.Message
				}
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("node not Ready after %s (%s); see %s", timeout, last, filepath.Join(c.Dir, "logs", "kubelet.log"))
}

// Attach returns the node an earlier process started in dir when all of it
// still works: containerd, the kubelet and every control-plane component
// run, the node's network link exists, the API server answers and the Node
// is Ready. Otherwise the error says what is missing; the caller then
// starts over (Down, then Up). Attach starts and stops nothing.
func Attach(ctx context.Context, dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st := Status(dir)
	var missing []string
	for _, n := range []string{"containerd", "kubelet"} {
		if !st[n] {
			missing = append(missing, n)
		}
	}
	if !linkExists(NodeBridge) {
		missing = append(missing, "network link "+NodeBridge)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("not running: %s", strings.Join(missing, ", "))
	}
	cp, err := controlplane.Attach(ctx, filepath.Join(dir, "controlplane"), "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	c := &Cluster{Dir: dir, Kubeconfig: cp.Kubeconfig, CP: cp, Containerd: filepath.Join(dir, "containerd", "containerd.sock")}
	if err := c.waitNodeReady(ctx, 10*time.Second); err != nil {
		return nil, err
	}
	return c, nil
}

// Status reports which processes of the node in dir run.
func Status(dir string) map[string]bool {
	out := controlplane.DetachedStatus(filepath.Join(dir, "controlplane"))
	for _, n := range []string{"containerd", "kubelet"} {
		if up, recorded := proc.Running(dir, n); recorded {
			out[n] = up
		}
	}
	return out
}
