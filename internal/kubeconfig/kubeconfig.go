// Package kubeconfig finds the API server both binaries talk to: an
// explicit --kubeconfig, then $KUBECONFIG, then the Pod's in-cluster
// configuration; and it sets the client-side rate limit deliberately.
//
// A rest.Config built by clientcmd or InClusterConfig with no QPS set gets
// client-go's limiter: 5 requests/s, burst 10, separately for every client
// made from it (each kind's client, the uncached reader, the event
// recorder). That limit, not the API server, made 1000 Bucketies take 600 s.
// Both binaries therefore take --kube-api-qps and --kube-api-burst, and the
// default is no client-side limit, as controller-runtime's own GetConfig
// sets it: API Priority and Fairness (on by default, GA since Kubernetes
// 1.29) queues and sheds the controller's requests on the server, fairly
// per service account, and client-go retries its 429s after Retry-After.
// A per-client token bucket cannot express a process total, and any value
// low enough to protect a small API server throttles the burst a platform
// team causes by applying 1000 Bucketies at once.
package kubeconfig

import (
	"flag"
	"fmt"
	"math"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Load returns the REST configuration for path ("" for the defaults).
func Load(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	if os.Getenv("KUBECONFIG") != "" {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a Pod (%v)", err)
	}
	return rc, nil
}

// LoadWith is Load with the rate limit r and the compression setting c
// applied: the configuration each binary's clients are built from.
func LoadWith(path string, r RateLimit, c Compression) (*rest.Config, error) {
	rc, err := Load(path)
	if err != nil {
		return nil, err
	}
	r.Apply(rc)
	c.Apply(rc)
	return rc, nil
}

// Flag names of the rate limit.
const (
	QPSFlag   = "kube-api-qps"
	BurstFlag = "kube-api-burst"
)

// Defaults of the rate limit: no client-side limit (see the package doc).
const (
	DefaultQPS   = -1
	DefaultBurst = 0
)

// RateLimit is the client-side rate limit of every Kubernetes client built
// from a REST configuration. It applies to each client separately.
type RateLimit struct {
	// QPS is the sustained requests per second per client; negative turns
	// the client-side limit off.
	QPS float64
	// Burst is the requests a client may send at once above QPS; 0 means
	// twice QPS. Ignored when QPS is negative.
	Burst int
}

// BindFlags adds --kube-api-qps and --kube-api-burst to fs, with the
// defaults.
func (r *RateLimit) BindFlags(fs *flag.FlagSet) {
	fs.Float64Var(&r.QPS, QPSFlag, DefaultQPS, "client-side limit of Kubernetes API requests per second, per client (each kind's client, the uncached reader, the event recorder); -1 turns it off and leaves protecting the API server to API Priority and Fairness")
	fs.IntVar(&r.Burst, BurstFlag, DefaultBurst, "requests a client may send at once above --"+QPSFlag+" (0: twice --"+QPSFlag+"); ignored when --"+QPSFlag+" is -1")
}

// Validate names the flag that is wrong. QPS 0 is refused: client-go would
// read it as its hidden default of 5 per second.
func (r RateLimit) Validate() error {
	switch {
	case math.IsNaN(r.QPS) || math.IsInf(r.QPS, 0):
		return fmt.Errorf("--%s %v: want a number of requests per second, or -1 for no client-side limit", QPSFlag, r.QPS)
	case r.QPS == 0:
		return fmt.Errorf("--%s 0: want a positive number of requests per second, or -1 for no client-side limit (0 would mean client-go's default of 5 per second)", QPSFlag)
	case r.Burst < 0:
		return fmt.Errorf("--%s %d: want 0 (twice --%s) or a positive number of requests", BurstFlag, r.Burst, QPSFlag)
	}
	return nil
}

// Apply sets the limit on rc; call Validate first.
func (r RateLimit) Apply(rc *rest.Config) {
	if r.QPS < 0 {
		rc.QPS, rc.Burst = -1, 0
		return
	}
	rc.QPS = float32(r.QPS)
	rc.Burst = r.Burst
	if rc.Burst == 0 {
		rc.Burst = int(math.Ceil(2 * r.QPS))
	}
}

// CompressionFlag turns gzip compression of the API server's responses on.
const CompressionFlag = "kube-api-compression"

// Compression is whether a client asks the API server to gzip its
// responses. By default it does not, as Kubernetes' own scheduler and
// controller-manager do not (kubernetes/kubernetes#80919): the API server
// gzips every response of more than 128 KiB to a client that accepts it,
// which every list page of a cache's first fill is (500 Bucketies are
// about 2 MB of JSON), and client-go accepts it unless told not to. Near
// the API server (a Pod's network) the compression costs the API server's
// CPU, which every client shares, and the replica's, and saves nothing
// the network was short of; across a thin link --kube-api-compression
// turns it on.
type Compression struct {
	On bool
}

// BindFlags adds --kube-api-compression to fs.
func (c *Compression) BindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.On, CompressionFlag, false, "ask the API server for gzip-compressed responses (it compresses those over 128 KiB, such as each page of a cache's first list): worth it only where the network to the API server is slower than its CPU; off, as for Kubernetes' own control plane")
}

// Apply sets it on rc, whatever rc's kubeconfig said (its
// disable-compression).
func (c Compression) Apply(rc *rest.Config) {
	rc.DisableCompression = !c.On
}
