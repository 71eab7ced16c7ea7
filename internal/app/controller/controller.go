// Package controller is the buckety-controller binary: configuration and
// wiring of the manager, the backends and the two reconcilers (its flags
// are package options). The
// command is thin so tests can run it in-process with their own arguments.
package controller

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/app/controller/options"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/runtime/lazylog"
	"github.com/Yolean/buckety-controller/internal/runtime/memory"
	"github.com/Yolean/buckety-controller/internal/version"
)

// Main runs the command with args (without the program name) and returns the
// process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, all.Registry())
}

func run(args []string, stdout, stderr io.Writer, reg *drivers.Registry) int {
	cmd := "run"
	if len(args) > 0 && (args[0] == "check" || args[0] == "version" || args[0] == "help") {
		cmd, args = args[0], args[1:]
	}
	o := Options{Registry: reg}
	fs := options.NewFlagSet(cmd, stderr, &o.Flags)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "buckety-controller: unexpected argument %q\n%s", fs.Arg(0), options.Usage)
		return 2
	}
	if err := o.Flags.Validate(); err != nil {
		fmt.Fprintf(stderr, "buckety-controller: %v\n", err)
		return 2
	}
	switch cmd {
	case "help":
		fs.Usage()
		return 0
	case "version":
		fmt.Fprintf(stdout, "buckety-controller %s\n", version.Version)
		for _, n := range reg.Names() {
			d, _ := reg.Get(n)
			fmt.Fprintf(stdout, "driver %s %s\n", n, d.Version())
		}
		return 0
	}
	cfg, err := config.Load(o.ConfigDir, config.Options{Registry: reg})
	if err != nil {
		fmt.Fprintf(stderr, "buckety-controller: invalid configuration: %v\n", err)
		return 1
	}
	if cmd == "check" {
		fmt.Fprintf(stdout, "%s: valid, %d backend(s):\n", cfg.Dir()+"/"+config.Filename, len(cfg.Backends))
		for _, b := range cfg.Backends {
			fmt.Fprintf(stdout, "  %s (driver %s %s)\n", b.Name, b.Driver, b.DriverImpl().Version())
		}
		// What a run would log once at startup, where the maintainer
		// checking the file sees it.
		for _, n := range cfg.Notices() {
			fmt.Fprintf(stdout, "note: %s\n", n)
		}
		return 0
	}
	o.Config = cfg
	o.GOGC, o.StartupGC = memory.ApplyGCDefault(os.Getenv)
	o.ReleaseMemory = true
	o.Log = lazylog.Wrap(zap.New(zap.UseFlagOptions(&o.Zap), zap.WriteTo(stderr)))
	ctrl.SetLogger(o.Log)
	klog.SetLogger(o.Log) // client-go (leader election) logs the same way
	for _, n := range cfg.Notices() {
		o.Log.Info(n) // config.Notices: an older spelling, a backend without a name policy beside one with
	}
	rc, err := o.LoadRESTConfig()
	if err != nil {
		fmt.Fprintf(stderr, "buckety-controller: %v\n", err)
		return 1
	}
	o.RESTConfig = rc
	if err := Run(ctrl.SetupSignalHandler(), o); err != nil {
		fmt.Fprintf(stderr, "buckety-controller: %v\n", err)
		return 1
	}
	return 0
}

// podNamespace is the namespace the controller runs in, for the Lease.
func podNamespace() (string, error) {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return "", errors.New("leader election needs a namespace: set --leader-election-namespace or POD_NAMESPACE")
	}
	return strings.TrimSpace(string(b)), nil
}
