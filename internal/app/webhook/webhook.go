// Package webhook is the buckety-webhook binary: flags and wiring of the
// admission server.
package webhook

import (
	"flag"
	"fmt"
	"io"
)

// Main parses flags and says what the webhook will do. The admission server
// is not in this build yet; it exits non-zero rather than pretend to serve.
func Main(args []string, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("buckety-webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("c", "/etc/buckety", "directory holding buckety-controller.yaml")
	certDir := fs.String("cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory holding tls.crt and tls.key")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fmt.Fprintf(stderr, "buckety-webhook: would validate Buckety and BucketyAccess against %s/buckety-controller.yaml, serving TLS from %s; the admission server is not in this build yet\n", *dir, *certDir)
	return 3
}
