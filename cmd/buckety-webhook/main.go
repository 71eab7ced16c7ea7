// Command buckety-webhook is the admission webhook that validates Buckety and
// BucketyAccess objects against the same buckety-controller.yaml.
package main

import (
	"os"

	"github.com/Yolean/buckety-controller/internal/app/webhook"
)

func main() {
	os.Exit(webhook.Main(os.Args[1:], os.Stdout, os.Stderr))
}
