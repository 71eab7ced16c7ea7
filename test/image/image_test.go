// Package image tests the buckety image: reproducible, multi-platform,
// nonroot, holding both binaries.
package image

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/proc"
)

// startRegistry serves the stand-in base image and returns its pinned
// reference.
func startRegistry(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin, err := proc.BuildGoBinary("BUCKETY_REGISTRY", "github.com/Yolean/buckety-controller/test/registry", dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := proc.Start(dir, "registry", bin, []string{"--addr-file", filepath.Join(dir, "base")}, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Error(err)
		}
	})
	for i := 0; i < 200; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "base")); err == nil {
			return strings.TrimSpace(string(b))
		}
		if done, err := p.Exited(); done {
			t.Fatalf("registry exited: %v\n%s", err, p.Tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("registry did not start")
	return ""
}

func build(t *testing.T, base, out string, env ...string) string {
	t.Helper()
	cmd := exec.Command("hack/image.sh")
	cmd.Dir = controlplane.RepoRoot()
	cmd.Env = append(append(os.Environ(), "BASE_IMAGE="+base, "OUT="+out, "VERSION=v0.0.0-test", "IMAGE=ghcr.io/yolean/buckety-controller:v0.0.0-test"), env...)
	b, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("hack/image.sh: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// TestImageIsReproducible builds the image twice from the same tree and base
// and requires the same digest, then checks what is inside. The second
// build runs with a developer's GOFLAGS (the test hooks' build tag, which
// would change the binaries): the script must not let them reach a release
// image.
func TestImageIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the image for two platforms; run without -short (make test)")
	}
	base := startRegistry(t)
	dir := t.TempDir()
	first := build(t, base, filepath.Join(dir, "oci1"))
	second := build(t, base, filepath.Join(dir, "oci2"), "GOFLAGS=-tags="+testhook.Tag)
	if !strings.Contains(first, "@sha256:") || first != second {
		t.Fatalf("want the same digest from two builds, the second with GOFLAGS=-tags=%s, got\n%s\n%s", testhook.Tag, first, second)
	}
	t.Logf("image %s", first)

	p, err := layout.FromPath(filepath.Join(dir, "oci1"))
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil || len(tm.Manifests) != 1 {
		t.Fatalf("want one index in the layout, got %v %v", tm, err)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.User != "65532" || cf.Architecture != m.Platform.Architecture {
			t.Errorf("%s: want user 65532 and matching architecture, got user %q arch %q", m.Platform.Architecture, cf.Config.User, cf.Architecture)
		}
		files := executables(t, img)
		for _, want := range []string{"buckety-controller", "buckety-webhook"} {
			if !files[want] {
				t.Errorf("%s: want executable /%s in the image, got %v", m.Platform.Architecture, want, files)
			}
		}
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("want linux/amd64 and linux/arm64, got %v", platforms)
	}
}

// executables lists the executable regular files at the image root.
func executables(t *testing.T, img v1.Image) map[string]bool {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n := strings.TrimPrefix(h.Name, "/")
			if h.Typeflag == tar.TypeReg && !strings.Contains(n, "/") && h.Mode&0o111 != 0 {
				out[n] = true
			}
		}
		if err := rc.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
