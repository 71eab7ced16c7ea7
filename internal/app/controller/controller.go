// Package controller is the buckety-controller binary: flags, configuration
// and wiring. The command is kept thin so that tests can run Main in-process
// with their own arguments and output.
package controller

import (
	"flag"
	"fmt"
	"io"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/version"
)

// DefaultConfigDir is where the Deployment mounts buckety-controller.yaml.
const DefaultConfigDir = "/etc/buckety"

const usage = `usage:
  buckety-controller [-c DIR]          run the controller
  buckety-controller check [-c DIR]    validate DIR/buckety-controller.yaml offline; exit 0 when valid
  buckety-controller version           print the product and driver versions
`

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
	fs := flag.NewFlagSet("buckety-controller "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	dir := fs.String("c", DefaultConfigDir, "directory holding "+config.Filename)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "buckety-controller: unexpected argument %q\n%s", fs.Arg(0), usage)
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
	cfg, err := config.Load(*dir, config.Options{Registry: reg})
	if err != nil {
		fmt.Fprintf(stderr, "buckety-controller: invalid configuration: %v\n", err)
		return 1
	}
	if cmd == "check" {
		fmt.Fprintf(stdout, "%s: valid, %d backend(s):\n", cfg.Dir()+"/"+config.Filename, len(cfg.Backends))
		for _, b := range cfg.Backends {
			fmt.Fprintf(stdout, "  %s (driver %s %s)\n", b.Name, b.Driver, b.DriverImpl().Version())
		}
		return 0
	}
	fmt.Fprintf(stderr, "buckety-controller: configuration valid (%d backends), but this build has no reconcilers yet; refusing to run as if it worked\n", len(cfg.Backends))
	return 3
}
