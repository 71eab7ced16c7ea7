package localstack

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

func TestFillEnvLocal(t *testing.T) {
	cases := []struct {
		name, in, want, err string
	}{
		{name: "ports and api port", in: "a: @P0@\nb: @P1@\nc: @API_PORT@ @P0@\n", want: "a: 7000\nb: 7001\nc: 6443 7000\n"},
		{name: "no placeholders", in: "a: b\n", want: "a: b\n"},
		{name: "a port it lacks", in: "a: @P2@\n", err: "cannot fill @P2@ (have 2 ports"},
		{name: "an unknown placeholder", in: "a: @KAFKA@ @P0@ @NEW@\n", err: "cannot fill @KAFKA@, @NEW@"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := fillEnvLocal(c.in, "6443", []int{7000, 7001})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want an error containing %q, got %q %v", c.err, got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("want %q, got %q %v", c.want, got, err)
			}
		})
	}
}

// TestRunOverlay: `make run` deploys the rendered release with the e2e
// harness's env-local overlay, every placeholder filled, plus its config
// and credentials, and the controller's default re-check interval.
func TestRunOverlay(t *testing.T) {
	dir := t.TempDir()
	ref, err := release.PinnedImage("ghcr.io/yolean/buckety-controller@sha256:1111111111111111111111111111111111111111111111111111111111111111")
	if err != nil {
		t.Fatal(err)
	}
	files, err := release.Render(filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base"), ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := release.WriteRelease(filepath.Join(dir, "release"), files); err != nil {
		t.Fatal(err)
	}
	free := func(n int) ([]int, error) {
		if n != 5 {
			t.Errorf("want 5 ports asked for (env-local's @P0@..@P4@), got %d", n)
		}
		return []int{41000, 41001, 41002, 41003, 41004}[:n], nil
	}
	ports, err := writeOverlays(controlplane.RepoRoot(), dir, "6443", free, "backends: []\n", "A=b\n")
	if err != nil {
		t.Fatal(err)
	}
	if ports[portWebhook] != 41002 || ports[portControllerProbes] != 41001 {
		t.Errorf("want webhook 41002 and controller probes 41001, got %v", ports)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, "overlay"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	y := string(out)
	for _, want := range []string{
		"--metrics-bind-address=127.0.0.1:41000", "--health-probe-bind-address=127.0.0.1:41001",
		"--port=41002", "url: https://127.0.0.1:41002/validate-buckety-yolean-se-v1alpha1-buckety",
		"--health-probe-bind-address=127.0.0.1:41004", "value: \"6443\"", "hostNetwork: true",
		"name: buckety-controller-config-", "name: buckety-controller-credentials-",
	} {
		if !strings.Contains(y, want) {
			t.Errorf("want %q in the rendered overlay", want)
		}
	}
	for _, unwanted := range []string{"@P", "@API_PORT@", "--recheck-interval"} {
		if strings.Contains(y, unwanted) {
			t.Errorf("want no %q in the rendered overlay", unwanted)
		}
	}
	// The e2e environment keeps its shortened re-check: run's layer is
	// what removes it.
	env, err := os.ReadFile(filepath.Join(dir, "env", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(env)), "--recheck-interval=10s") {
		t.Error("want env-local's --recheck-interval=10s, which run's layer removes")
	}
}
