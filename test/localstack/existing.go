package localstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/cluster"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// ExistingOptions deploy buckety into a cluster that already exists (a k3d
// cluster, a real one): no node, no local backends, cert-manager present.
type ExistingOptions struct {
	// Kubeconfig reaches the cluster.
	Kubeconfig string
	// Image is a pullable reference pinned by digest; when empty the image
	// is built into ./oci and ImportCommand loads it into the cluster.
	Image string
	// ImportCommand loads an OCI archive into the cluster, e.g.
	// "k3d image import -c buckety"; the archive path is appended.
	ImportCommand string
	// ConfigDir holds buckety-controller.yaml and, optionally,
	// credentials.env (the variables its ${VAR}s read).
	ConfigDir string
}

// UpExisting renders the release for the image and applies it with a
// maintainer-style overlay (config and credentials), the way a platform
// installs buckety, then waits for both Deployments.
func UpExisting(ctx context.Context, dir string, o ExistingOptions, log Step) (*Stack, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	binDir, err := controlplane.ResolveBinDir("")
	if err != nil {
		return nil, err
	}
	s := &Stack{Dir: dir, Kubeconfig: o.Kubeconfig, KubectlBin: filepath.Join(binDir, "kubectl")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if o.Image == "" {
		if o.ImportCommand == "" {
			return nil, fmt.Errorf("an existing cluster needs CONTROLLER_IMAGE (a pullable ref@sha256:...) or IMAGE_IMPORT (a command that loads an OCI archive, such as \"k3d image import -c buckety\")")
		}
		if err := timed(log, "buckety image (contain)", func() error {
			out := filepath.Join(dir, "oci")
			cmd := exec.Command("hack/image.sh")
			cmd.Dir = controlplane.RepoRoot()
			cmd.Env = append(os.Environ(), "OUT="+out)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("hack/image.sh: %v\n%s", err, b)
			}
			ref, err := release.ImageFromOCILayout(out, release.ImageName)
			if err != nil {
				return err
			}
			s.Image = ref.String()
			if err := cluster.OCIArchive(out, out+".tar"); err != nil {
				return err
			}
			f := strings.Fields(o.ImportCommand)
			if b, err := exec.CommandContext(ctx, f[0], append(f[1:], out+".tar")...).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v\n%s", o.ImportCommand, err, b)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	} else {
		s.Image = o.Image
	}
	if err := timed(log, "deploy release + config overlay", func() error {
		ref, err := release.PinnedImage(s.Image)
		if err != nil {
			return err
		}
		files, err := release.Render(filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base"), ref)
		if err != nil {
			return err
		}
		if err := release.WriteRelease(filepath.Join(dir, "release"), files); err != nil {
			return err
		}
		k, err := ExistingOverlay(o.ConfigDir)
		if err != nil {
			return err
		}
		overlay := filepath.Join(dir, "overlay")
		if err := os.MkdirAll(overlay, 0o755); err != nil {
			return err
		}
		for name, body := range k {
			if err := os.WriteFile(filepath.Join(overlay, name), body, 0o644); err != nil {
				return err
			}
		}
		if out, err := s.Kubectl(ctx, "apply", "--server-side", "-k", overlay); err != nil {
			return fmt.Errorf("kubectl apply -k %s: %v\n%s", overlay, err, out)
		}
		for _, d := range []string{"buckety-webhook", "buckety-controller"} {
			if out, err := s.Kubectl(ctx, "-n", "buckety-system", "rollout", "status", "deploy/"+d, "--timeout=180s"); err != nil {
				return fmt.Errorf("rollout of %s: %v\n%s", d, err, out)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// ExistingOverlay is the overlay for an existing cluster: the release plus
// the config directory's buckety-controller.yaml and credentials.env.
func ExistingOverlay(configDir string) (map[string][]byte, error) {
	cfg, err := os.ReadFile(filepath.Join(configDir, config.Filename))
	if err != nil {
		return nil, fmt.Errorf("the existing-cluster config: %w", err)
	}
	files := map[string][]byte{config.Filename: cfg}
	k := `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: buckety-system
resources:
- ../release
configMapGenerator:
- name: buckety-controller-config
  files:
  - buckety-controller.yaml
`
	if creds, err := os.ReadFile(filepath.Join(configDir, "credentials.env")); err == nil {
		files["credentials.env"] = creds
		k += `secretGenerator:
- name: buckety-controller-credentials
  envs:
  - credentials.env
`
	}
	files["kustomization.yaml"] = []byte(k)
	return files, nil
}
