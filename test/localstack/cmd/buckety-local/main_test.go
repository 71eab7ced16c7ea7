package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/test/localstack"
)

// TestResumeHint: a failed up names the command that gets the user going
// again (SeaweedFS still asked for), and the one that removes everything,
// for make run's directory and for any other.
func TestResumeHint(t *testing.T) {
	for _, tc := range []struct {
		dir         string
		seaweedfs   bool
		again, stop string
	}{
		{".run/local", false, "`make run`", "`make stop`"},
		{".run/local/", false, "`make run`", "`make stop`"},
		{".run/local", true, "`make run SEAWEEDFS=true`", "`make stop`"},
		{".run/e2e", false, "`go run ./test/localstack/cmd/buckety-local up --dir .run/e2e`", "`go run ./test/localstack/cmd/buckety-local down --dir .run/e2e`"},
		{".run/e2e", true, "`go run ./test/localstack/cmd/buckety-local up --dir .run/e2e --seaweedfs`", "`go run ./test/localstack/cmd/buckety-local down --dir .run/e2e`"},
	} {
		err := resumeHint(errors.New("deploy release + local overlay: boom"), tc.dir, localstack.Options{SeaweedFS: tc.seaweedfs})
		msg := err.Error()
		for _, want := range []string{"deploy release + local overlay: boom", tc.again + " again", tc.stop + " removes everything"} {
			if !strings.Contains(msg, want) {
				t.Errorf("dir %s: want %q in the message, got %q", tc.dir, want, msg)
			}
		}
	}
}

// TestOursTellsThisCheckoutsClustersFromAnExistingOne: a README reader
// exports the KUBECONFIG make run or make run-controlplane printed; a later
// make run or make test (the e2e suite's up) must start its local node, not
// take that for an existing cluster to deploy onto.
func TestOursTellsThisCheckoutsClustersFromAnExistingOne(t *testing.T) {
	for _, c := range []struct {
		kubeconfig, dir string
		want            bool
	}{
		{"/src/buckety/.run/local/cluster/controlplane/kubeconfig", "/src/buckety/.run/local", true},
		{"/src/buckety/.run/local/cluster/controlplane/kubeconfig", "/src/buckety/.run/e2e", true},
		{"/src/buckety/.run/controlplane/kubeconfig", "/src/buckety/.run/local", true},
		{"/home/me/.kube/config", "/src/buckety/.run/local", false},
		{"/src/other/.run/local/cluster/controlplane/kubeconfig", "/src/buckety/.run/local", false},
		{"/tmp/kubeconfig", "/tmp/state", false},
		{"/tmp/state/cluster/controlplane/kubeconfig", "/tmp/state", true},
		{"/src/buckety/.run/localother/kubeconfig", "/src/buckety/.run/local", true},
		{"/src/buckety/.runx/kubeconfig", "/src/buckety/.run/local", false},
	} {
		if got := ours(c.kubeconfig, c.dir); got != c.want {
			t.Errorf("ours(%s, %s) = %v, want %v", c.kubeconfig, c.dir, got, c.want)
		}
	}
}
