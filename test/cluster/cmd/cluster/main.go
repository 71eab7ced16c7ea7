// Command cluster runs the local single-node Kubernetes:
//
//	cluster up [--dir .run/cluster]      start it (idempotent) and wait for a Ready node
//	cluster down [--dir ...]             stop everything and remove what it left on the host
//	cluster status [--dir ...]           say what runs
//	cluster kubeconfig [--dir ...]       print the admin kubeconfig path
//
// Requires root on Linux. Each component logs to <dir>/logs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/Yolean/buckety-controller/test/cluster"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: cluster up|down|status|kubeconfig [--dir DIR]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", ".run/cluster", "state directory")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(abs, "controlplane", "kubeconfig")
	switch args[0] {
	case "up":
		if err := cluster.CheckHost(); err != nil {
			return err
		}
		if st := cluster.Status(abs); st["kubelet"] && st["kube-apiserver"] {
			fmt.Printf("already up; KUBECONFIG=%s\n", kubeconfig)
			return nil
		}
		if err := cluster.Down(abs); err != nil {
			return fmt.Errorf("clear a previous run: %w", err)
		}
		bin, err := controlplane.ResolveBinDir("")
		if err != nil {
			return err
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if _, err := cluster.Up(ctx, abs, bin, func(s string) { fmt.Println("  " + s) }); err != nil {
			return err
		}
		fmt.Printf("node Ready in %s; KUBECONFIG=%s; logs in %s\n", time.Since(start).Round(100*time.Millisecond), kubeconfig, filepath.Join(abs, "logs"))
		return nil
	case "down":
		if err := cluster.Down(abs); err != nil {
			return err
		}
		if left := cluster.Leftovers(abs); len(left) > 0 {
			return fmt.Errorf("left behind: %v", left)
		}
		fmt.Println("cluster down; nothing left behind")
		return nil
	case "status":
		st := cluster.Status(abs)
		names := make([]string, 0, len(st))
		for n := range st {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			fmt.Println("not running")
		}
		for _, n := range names {
			fmt.Printf("%-24s running=%v\n", n, st[n])
		}
		return nil
	case "kubeconfig":
		if _, err := os.Stat(kubeconfig); err != nil {
			return fmt.Errorf("no kubeconfig at %s: run cluster up first", kubeconfig)
		}
		fmt.Println(kubeconfig)
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}
