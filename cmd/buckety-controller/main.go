// Command buckety-controller reconciles Buckety and BucketyAccess objects
// against the backends in buckety-controller.yaml.
package main

import (
	"os"

	"github.com/Yolean/buckety-controller/internal/app/controller"
)

func main() {
	os.Exit(controller.Main(os.Args[1:], os.Stdout, os.Stderr))
}
