// Command e2etool does the few things the shell harness cannot do portably:
//
//	e2etool freeports N            print N free TCP ports on 127.0.0.1
//	e2etool cert DIR               write ca.crt, ca.key and a leaf it signs, tls.crt, tls.key, for 127.0.0.1 (the webhook's serving certificate)
//	e2etool load-image STATE OCI   import an OCI layout into the local node of STATE (buckety-local's --dir)
//	e2etool probe-image TAR        write the probe image (registry.local/buckety/probe:v1) as a docker tarball
//	e2etool server-image NAME TAR  write the image of test server NAME (minio, seaweedfs: registry.local/buckety/NAME:e2e), built by test/tools/install.sh from its pin, as a docker tarball
//	e2etool second-replica SUFFIX  read a host-network Deployment (JSON) on stdin, write a one-replica copy on free ports
//	e2etool module-dir MODULE      print the directory of a dependency (at go.mod's version), downloading it first
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/cluster"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/gomod"
	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "e2etool: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: e2etool freeports N | cert DIR | load-image STATE OCI")
	}
	switch args[0] {
	case "freeports":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return err
		}
		ports, err := proc.FreePorts(n)
		if err != nil {
			return err
		}
		for _, p := range ports {
			fmt.Println(p)
		}
		return nil
	case "cert":
		ca, err := pki.NewCA("buckety-e2e-webhook-ca")
		if err != nil {
			return err
		}
		crt, key, err := ca.Issue("buckety-webhook", nil, []string{"localhost", "buckety-webhook.buckety-system.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, 7*24*time.Hour)
		if err != nil {
			return err
		}
		caKey, err := ca.KeyPEM()
		if err != nil {
			return err
		}
		for n, b := range map[string][]byte{"ca.crt": ca.CertPEM, "ca.key": caKey, "tls.crt": crt, "tls.key": key} {
			if err := os.WriteFile(filepath.Join(args[1], n), b, 0o600); err != nil {
				return err
			}
		}
		return nil
	case "second-replica":
		return secondReplica(os.Stdin, os.Stdout, args[1])
	case "module-dir":
		// Not `go list -m -f {{.Dir}}`: it prints nothing for a module
		// that is not downloaded yet (a fresh machine).
		dir, err := gomod.Dir(args[1])
		if err != nil {
			return err
		}
		fmt.Println(dir)
		return nil
	case "probe-image":
		return cluster.GoImage("github.com/Yolean/buckety-controller/test/probe", "registry.local/buckety/probe:v1", args[1], 65532)
	case "server-image":
		// The k3d environment runs the S3 servers the local one runs,
		// from the same pins: MinIO's last image on quay.io predates the
		// release buckety issues keys on, and one pin per server keeps
		// the two environments alike.
		if len(args) != 3 || (args[1] != "minio" && args[1] != "seaweedfs") {
			return fmt.Errorf("usage: e2etool server-image minio|seaweedfs TAR")
		}
		cmd := exec.Command("bash", filepath.Join(controlplane.RepoRoot(), "test/tools/install.sh"), args[1])
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("install.sh %s: %w", args[1], err)
		}
		bin := strings.TrimSpace(string(out))
		return cluster.BinaryImage(bin, "registry.local/buckety/"+args[1]+":e2e", args[2], 65532)
	case "load-image":
		if len(args) != 3 {
			return fmt.Errorf("usage: e2etool load-image STATE OCI")
		}
		ref, err := release.ImageFromOCILayout(args[2], release.ImageName)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(args[2], "index.json"))
		if err != nil {
			return err
		}
		tagged := refName(b)
		if tagged == "" {
			return fmt.Errorf("%s: no image name in index.json", args[2])
		}
		c := &cluster.Cluster{Dir: filepath.Join(args[1], "cluster"), Containerd: filepath.Join(args[1], "cluster", "containerd", "containerd.sock")}
		return c.ImportOCILayout(args[2], tagged, ref.String())
	}
	return fmt.Errorf("unknown command %q", args[0])
}
