// Package kubeconfig finds the API server both binaries talk to: an
// explicit --kubeconfig, then $KUBECONFIG, then the Pod's in-cluster
// configuration.
package kubeconfig

import (
	"fmt"
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
