// Command controlplane runs the local control plane of the quick start:
//
//	controlplane up [--dir .run/controlplane]     start etcd, kube-apiserver, kube-controller-manager; install CRDs
//	controlplane down [--dir ...]                 stop them by PID and remove their data
//	controlplane status [--dir ...]               say what runs
//	controlplane kubeconfig [--dir ...]           print the kubeconfig path
//
// Processes are detached and tracked by pid files, so `up` returns and
// `down` stops exactly what `up` started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/Yolean/buckety-controller/test/controlplane"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: controlplane up|down|status|kubeconfig [--dir DIR]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".run/controlplane", "state directory: data, certificates, kubeconfig, logs, pid files")
	crds := fs.String("crds", controlplane.CRDDir(), "directory of CRDs to install")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(abs, "kubeconfig")
	switch args[0] {
	case "up":
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := controlplane.Attach(ctx, abs, "etcd", "kube-apiserver", "kube-controller-manager"); err == nil {
			fmt.Printf("already running; KUBECONFIG=%s\n", kubeconfig)
			return nil
		} else if _, serr := os.Stat(abs); serr == nil {
			fmt.Printf("starting again: the control plane of an earlier run is not working (%v)\n", err)
		}
		// A previous run that died half-way leaves pid files or data: clear it.
		if err := controlplane.StopDetached(abs); err != nil {
			return err
		}
		if err := os.RemoveAll(abs); err != nil {
			return err
		}
		start := time.Now()
		cp, err := controlplane.Start(ctx, controlplane.Options{Dir: abs, Detached: true, ControllerManager: true, CRDDirs: []string{*crds}})
		if err != nil {
			return err
		}
		fmt.Printf("control plane up in %s at %s\n", time.Since(start).Round(100*time.Millisecond), cp.URL)
		for _, p := range cp.Processes() {
			fmt.Printf("  %-24s pid %-7d log %s\n", p.Name, p.PID(), p.Log)
		}
		return nil
	case "down":
		if err := controlplane.StopDetached(abs); err != nil {
			return err
		}
		if err := os.RemoveAll(abs); err != nil {
			return err
		}
		fmt.Println("control plane stopped")
		return nil
	case "status":
		st := controlplane.DetachedStatus(abs)
		if len(st) == 0 {
			fmt.Println("not running")
			return nil
		}
		for name, up := range st {
			fmt.Printf("%-24s running=%v\n", name, up)
		}
		return nil
	case "kubeconfig":
		if _, err := os.Stat(kubeconfig); err != nil {
			return fmt.Errorf("no kubeconfig at %s: run `make run` first", kubeconfig)
		}
		fmt.Println(kubeconfig)
		return nil
	}
	return fmt.Errorf("unknown command %q: want up, down, status or kubeconfig", args[0])
}
