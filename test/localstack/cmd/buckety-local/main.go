// Command buckety-local is `make run` and `make stop`:
//
//	buckety-local up [--dir .run/local] [--seaweedfs]   node, backends, image, buckety from the release, examples
//	buckety-local down [--dir ...]          stop all of it and remove what it left
//	buckety-local kubeconfig [--dir ...]    print the kubeconfig path
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/Yolean/buckety-controller/test/cluster"
	"github.com/Yolean/buckety-controller/test/localstack"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "buckety-local: %v\n", err)
		os.Exit(1)
	}
}

const examples = `apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata:
  name: orders
  namespace: demo
  labels: {yolean.se/generation: "003"}
spec:
  backend: kafka
  name: "${namespace}.${name}.v${label['yolean.se/generation']}"
  parameters: {partitions: "3", config.retention.ms: "604800000"}
  defaultAccess: {credentialsSecretName: orders-topic}
---
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: files, namespace: demo}
spec:
  backend: s3
  name: "${namespace}-${name}-${backend.zone}"
  parameters: {versioning: "true"}
  defaultAccess: {credentialsSecretName: files-bucket}
`

// defaultDir is make run's state directory.
const defaultDir = ".run/local"

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: buckety-local up|down|kubeconfig [--dir DIR] [--seaweedfs] [--outage-twins]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", defaultDir, "state directory")
	noDeploy := fs.Bool("no-deploy", false, "up: stop after node, backends and images (the e2e harness deploys); writes DIR/backends.env and DIR/oci")
	// Opt-in: SeaweedFS' binary takes minutes to build cold
	// (BUCKETY_SEAWEEDFS), which a first make run must not wait for.
	withSeaweedFS := fs.Bool("seaweedfs", false, "up: also run SeaweedFS (needs BUCKETY_SEAWEEDFS); backend s3-seaweedfs, and SEAWEEDFS_* in DIR/backends.env")
	// The e2e harness's: a twin of each backend for claims-and-outage to
	// hang while the other scenarios use the backend it twins.
	withTwins := fs.Bool("outage-twins", false, "up: also run a second process of each backend, with the same credentials (OUTAGE_* and *_OUTAGE_PIDFILE in DIR/backends.env), for scenarios that hang one")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(abs, "cluster", "controlplane", "kubeconfig")
	switch args[0] {
	case "up":
		if kc := os.Getenv("KUBECONFIG"); kc != "" && !ours(kc, abs) {
			return upExisting(abs, kc)
		}
		if err := cluster.CheckHost(); err != nil {
			return err
		}
		opts := localstack.Options{SeaweedFS: *withSeaweedFS, OutageTwins: *withTwins}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		if *noDeploy {
			if _, err := localstack.Prepare(ctx, abs, opts, func(l string) { fmt.Println(l) }); err != nil {
				return resumeHint(err, *dir, opts)
			}
			fmt.Printf("prepared in %s: KUBECONFIG=%s OCI_DIR=%s E2E_BACKENDS_ENV=%s\n", time.Since(start).Round(time.Second), kubeconfig, filepath.Join(abs, "oci"), filepath.Join(abs, "backends.env"))
			return nil
		}
		s, err := localstack.Up(ctx, abs, opts, func(l string) { fmt.Println(l) })
		if err != nil {
			return resumeHint(err, *dir, opts)
		}
		ex := filepath.Join(abs, "examples.yaml")
		if err := os.WriteFile(ex, []byte(examples), 0o644); err != nil {
			return err
		}
		if out, err := s.Kubectl(ctx, "apply", "-f", ex); err != nil {
			return resumeHint(fmt.Errorf("apply examples: %v\n%s", err, out), *dir, opts)
		}
		if out, err := s.Kubectl(ctx, "-n", "demo", "wait", "--for=condition=Ready", "buckety/orders", "buckety/files", "--timeout=120s"); err != nil {
			return resumeHint(fmt.Errorf("examples not Ready: %v\n%s", err, out), *dir, opts)
		}
		out, err := s.Kubectl(ctx, "-n", "demo", "get", "bucketies,bucketyaccesses")
		if err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		fmt.Printf("\nbuckety is up in %s: image %s\n\n%s\n", time.Since(start).Round(time.Second), s.Image, out)
		for _, sec := range []string{"orders-topic", "files-bucket"} {
			out, err := s.Kubectl(ctx, "-n", "demo", "get", "secret", sec, "-o", "go-template={{range $k, $v := .data}}{{$k}} {{end}}")
			if err != nil {
				return fmt.Errorf("%v\n%s", err, out)
			}
			keys := strings.Fields(string(out))
			sort.Strings(keys)
			fmt.Printf("Secret demo/%s keys: %s\n", sec, strings.Join(keys, ", "))
		}
		fmt.Printf(`
Use it:
  export KUBECONFIG=%s
  export PATH=%s:$PATH     # kubectl v1.36.3
  kubectl -n demo get bky,bkya
  kubectl -n buckety-system get pods
  kubectl -n buckety-system scale deploy/buckety-controller --replicas=0   # Secrets keep working
Backends (loopback): kafka %s (SASL/SCRAM and ACLs: every access gets a user of its own), versitygw %s and minio %s%s (every access gets a key of its own)
Logs: %s/*/logs, kubectl -n buckety-system logs deploy/buckety-controller
Stop everything with: make stop
`, kubeconfig, filepath.Dir(s.KubectlBin), strings.Join(s.Broker.Addrs, ","), s.VersityGW.Endpoint, s.MinIO.Endpoint, seaweedfsLine(s), abs)
		return nil
	case "down":
		if err := localstack.Down(abs); err != nil {
			return err
		}
		if left := cluster.Leftovers(filepath.Join(abs, "cluster")); len(left) > 0 {
			return fmt.Errorf("left behind: %v", left)
		}
		fmt.Println("stopped; nothing left behind")
		return nil
	case "kubeconfig":
		fmt.Println(kubeconfig)
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// seaweedfsLine names SeaweedFS among the backends when it runs.
func seaweedfsLine(s *localstack.Stack) string {
	if s.SeaweedFS == nil {
		return ""
	}
	return ", seaweedfs " + s.SeaweedFS.Endpoint + " (backend s3-seaweedfs)"
}

// resumeHint says, after a failed up, how to get going again: up resumes
// (localstack.Up), so the same command again, once the cause is fixed,
// carries on from what runs (with the same options: without --seaweedfs a
// running SeaweedFS is not reused); down removes everything.
func resumeHint(err error, dir string, opts localstack.Options) error {
	again, stop := "make run", "make stop"
	if opts.SeaweedFS {
		again += " SEAWEEDFS=true"
	}
	if filepath.Clean(dir) != filepath.Clean(defaultDir) {
		again = "go run ./test/localstack/cmd/buckety-local up --dir " + dir
		if opts.SeaweedFS {
			again += " --seaweedfs"
		}
		if opts.OutageTwins {
			again += " --outage-twins"
		}
		stop = "go run ./test/localstack/cmd/buckety-local down --dir " + dir
	}
	return fmt.Errorf("%w\n\nWhat was started so far is still running. Fix the cause above, then run `%s` again: it reuses what runs and redoes the rest. `%s` removes everything", err, again, stop)
}

// upExisting deploys into the cluster KUBECONFIG points at.
// ours reports whether kubeconfig is one of this checkout's own local
// control planes (under the state directory's parent, .run: make run's,
// make run-controlplane's, the e2e suite's), which a README reader has
// exported, rather than an existing cluster to deploy onto.
func ours(kubeconfig, abs string) bool {
	kc, err := filepath.Abs(kubeconfig)
	if err != nil {
		return false
	}
	sep := string(filepath.Separator)
	if strings.HasPrefix(kc, abs+sep) {
		return true
	}
	run := filepath.Dir(abs)
	return filepath.Base(run) == ".run" && strings.HasPrefix(kc, run+sep)
}

func upExisting(abs, kubeconfig string) error {
	cfgDir := os.Getenv("BUCKETY_CONFIG_DIR")
	if cfgDir == "" {
		return fmt.Errorf("KUBECONFIG=%s points at an existing cluster: to deploy buckety onto it, set BUCKETY_CONFIG_DIR to a directory with buckety-controller.yaml (and credentials.env) whose backends that cluster reaches, e.g. test/e2e/overlays/<implementation> (docs/install.md); to start a local node instead, unset KUBECONFIG", kubeconfig)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	s, err := localstack.UpExisting(ctx, filepath.Join(abs, "existing"), localstack.ExistingOptions{
		Kubeconfig: kubeconfig, Image: os.Getenv("CONTROLLER_IMAGE"), ImportCommand: os.Getenv("IMAGE_IMPORT"), ConfigDir: cfgDir,
	}, func(l string) { fmt.Println(l) })
	if err != nil {
		return err
	}
	fmt.Printf("\nbuckety %s deployed to the cluster of KUBECONFIG=%s in %s\n", s.Image, kubeconfig, time.Since(start).Round(time.Second))
	return nil
}
