package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/proc"
)

// OwnerFile records which state directory's node holds this host: its
// network links, kubepods cgroups and HostPaths are one per machine, so a
// second node (make test's beside make run's) must neither start nor clear
// them while the first runs. It is under /run, which a reboot empties with
// the node.
var OwnerFile = "/run/buckety-node-owner"

func hostOwner() string {
	b, err := os.ReadFile(OwnerFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// startingFor is how long a fresh owner record holds the host without any
// of its node's processes running: Up records the owner before it
// installs packages and starts them.
const startingFor = 5 * time.Minute

// HeldElsewhere names the state directory of a node that is running, or
// starting, on this host from another directory than dir.
func HeldElsewhere(dir string) (string, bool) {
	o := hostOwner()
	if o == "" || o == dir {
		return "", false
	}
	for _, up := range Status(o) {
		if up {
			return o, true
		}
	}
	if st, err := os.Stat(OwnerFile); err == nil && time.Since(st.ModTime()) < startingFor {
		if _, err := os.Stat(o); err == nil {
			return o, true // starting: recorded, its processes not yet
		}
	}
	return "", false
}

// hostIsDirs reports whether the host-wide part of a node (links,
// cgroups, HostPaths) is dir's to clear: a node of dir's, or what is left
// of a node no directory runs any more; never while another directory's
// node runs or starts, and never on a host where no node was started.
func hostIsDirs(dir string) bool {
	owner := hostOwner()
	if owner == dir {
		return true
	}
	if _, held := HeldElsewhere(dir); held {
		return false
	}
	_, err := os.Stat(dir)
	return err == nil || owner != "" || len(nodeLinks()) > 0
}

// nodeLinks is Links; a test of a machine without a node replaces it.
var nodeLinks = Links

// guardHost refuses to start a node of dir while another directory's runs
// or starts, and records dir as the host's owner.
func guardHost(dir string) error {
	if other, held := HeldElsewhere(dir); held {
		return ErrHeld(other)
	}
	if err := os.WriteFile(OwnerFile, []byte(dir+"\n"), 0o644); err != nil {
		return fmt.Errorf("record the node's directory in %s: %w", OwnerFile, err)
	}
	return nil
}

// releaseHost removes the owner record when it names dir.
func releaseHost(dir string) error {
	if hostOwner() != dir {
		return nil
	}
	if err := os.Remove(OwnerFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ErrHeld is the refusal to start or clear a node while another runs.
func ErrHeld(other string) error {
	return fmt.Errorf("the local node of %s is running on this machine, and a machine holds one: stop it first (make stop for .run/local, make stop-e2e for .run/e2e, or buckety-local down --dir with its directory)", other)
}

// Down stops everything Up started in dir and removes what it left on the
// host: Pods' containers and shims, containerd, the kubelet, the control
// plane, mounts, network links, cgroups and the host paths containerd and
// the kubelet always write. It is idempotent. The host-wide part is done
// only for a node of dir's, or what is left of a node no directory runs
// any more: never while another directory's node runs, and never on a host
// where no node was started (a Docker host's /run/containerd is its own).
func Down(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	host := hostIsDirs(dir)
	sock := filepath.Join(dir, "containerd", "containerd.sock")
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(proc.StopDetached(dir, "kubelet", 20*time.Second))
	if _, err := os.Stat(sock); err == nil {
		c := &Cluster{Dir: dir, Containerd: sock}
		add(c.removeContainers())
	}
	add(proc.StopDetached(dir, "containerd", 20*time.Second))
	add(killShims(sock))
	add(controlplane.StopDetached(filepath.Join(dir, "controlplane")))
	if !host {
		add(unmountUnder([]string{dir}))
		add(os.RemoveAll(dir))
		return errors.Join(errs...)
	}
	add(unmountUnder(append([]string{dir}, HostPaths...)))
	add(deleteLinks())
	add(removeCgroups())
	for _, p := range append([]string{dir}, HostPaths...) {
		if err := os.RemoveAll(p); err != nil {
			add(err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(OwnerFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			add(err)
		}
	}
	return errors.Join(errs...)
}

// removeContainers kills and deletes every task and container of the CRI
// namespace through containerd.
func (c *Cluster) removeContainers() error {
	out, err := exec.Command("ctr", "--address", c.Containerd, "-n", "k8s.io", "containers", "ls", "-q").Output()
	if err != nil {
		return nil // containerd is not answering: killShims handles what runs
	}
	var errs []error
	for _, id := range strings.Fields(string(out)) {
		// Errors are expected for containers without a task.
		if err := c.ctr("tasks", "kill", "-s", "SIGKILL", id); err != nil && !strings.Contains(err.Error(), "not found") {
			errs = append(errs, err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	for _, id := range strings.Fields(string(out)) {
		if err := c.ctr("tasks", "delete", "-f", id); err != nil && !strings.Contains(err.Error(), "not found") {
			errs = append(errs, err)
		}
		if err := c.ctr("containers", "rm", id); err != nil && !strings.Contains(err.Error(), "not found") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// shimPIDs finds containerd shims (and their children) serving sock.
func shimPIDs(sock string) []int {
	pids, err := proc.Matching(func(args []string) bool {
		cmd := strings.Join(args, " ")
		return strings.Contains(cmd, "containerd-shim") && strings.Contains(cmd, sock)
	})
	if err != nil {
		return nil
	}
	return pids
}

func killShims(sock string) error {
	pids := shimPIDs(sock)
	for _, pid := range pids {
		// A shim leads its own process group with the container processes.
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill shim %d: %w", pid, err)
			}
		}
	}
	for i := 0; i < 50 && len(shimPIDs(sock)) > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if left := shimPIDs(sock); len(left) > 0 {
		return fmt.Errorf("shims still running: %v", left)
	}
	return nil
}

// Mounts lists mount points under any of roots, deepest first.
func Mounts(roots []string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		for _, r := range roots {
			if mp == r || strings.HasPrefix(mp, r+"/") {
				out = append(out, mp)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func unmountUnder(roots []string) error {
	var errs []error
	for i := 0; i < 3; i++ {
		mps := Mounts(roots)
		if len(mps) == 0 {
			return nil
		}
		errs = nil
		for _, mp := range mps {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
			}
		}
	}
	if left := Mounts(roots); len(left) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %v", left))
	}
	return errors.Join(errs...)
}

// Links lists the node's network links: its bridges and veths attached to
// the CNI bridge.
func Links() []string {
	var out []string
	for _, n := range []string{NodeBridge, CNIBridge} {
		if linkExists(n) {
			out = append(out, n)
		}
	}
	b, err := exec.Command("ip", "-o", "link", "show", "master", CNIBridge).Output()
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 {
				out = append(out, strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0])
			}
		}
	}
	return out
}

func deleteLinks() error {
	var errs []error
	links := Links()
	// veths first, bridges last.
	sort.SliceStable(links, func(i, j int) bool {
		return !strings.HasPrefix(links[i], "bkt-") && strings.HasPrefix(links[j], "bkt-")
	})
	for _, l := range links {
		if err := run("ip", "link", "del", l); err != nil && linkExists(l) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeCgroups removes the kubelet's kubepods cgroups (cgroup v1).
func removeCgroups() error {
	ctrls, err := os.ReadDir("/sys/fs/cgroup")
	if err != nil {
		return nil
	}
	var errs []error
	for _, c := range ctrls {
		root := filepath.Join("/sys/fs/cgroup", c.Name(), "kubepods")
		var dirs []string
		if err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		}); err != nil {
			continue
		}
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what of a node in dir is still on the host; empty after
// a clean Down.
func Leftovers(dir string) []string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for n, up := range Status(dir) {
		if up {
			out = append(out, "process "+n)
		}
	}
	if pids := shimPIDs(filepath.Join(dir, "containerd", "containerd.sock")); len(pids) > 0 {
		out = append(out, fmt.Sprintf("shims %v", pids))
	}
	if !hostIsDirs(dir) {
		// The host-wide part is another directory's node's, or no node's.
		for _, m := range Mounts([]string{dir}) {
			out = append(out, "mount "+m)
		}
		if _, err := os.Stat(dir); err == nil {
			out = append(out, "path "+dir)
		}
		return out
	}
	for _, m := range Mounts(append([]string{dir}, HostPaths...)) {
		out = append(out, "mount "+m)
	}
	for _, l := range Links() {
		out = append(out, "link "+l)
	}
	for _, p := range append([]string{dir}, HostPaths...) {
		if _, err := os.Stat(p); err == nil {
			out = append(out, "path "+p)
		}
	}
	if hostOwner() == dir {
		out = append(out, "owner record "+OwnerFile)
	}
	if b, err := exec.Command("iptables-save").Output(); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "CNI-") || strings.Contains(line, "KUBE-") {
				out = append(out, "iptables "+line)
			}
		}
	}
	return out
}
