// Command registry serves an in-memory OCI registry on 127.0.0.1 holding a
// stand-in for the distroless static nonroot base image (an index for
// linux/amd64 and linux/arm64: /etc/passwd and /etc/group with nonroot
// 65532, CA certificates, /tmp), so `contain build` runs with no network.
// The production contain.yaml pins the real distroless image by digest; a
// build here only swaps the base reference.
//
//	registry --addr-file F   # writes "127.0.0.1:PORT/distroless/static@sha256:..." to F, serves until SIGTERM
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "registry: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	addrFile := flag.String("addr-file", "", "file to write the base image reference to when ready")
	flag.Parse()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "registry: %v\n", err)
			os.Exit(1)
		}
	}()
	idx, err := baseIndex()
	if err != nil {
		return err
	}
	ref, err := name.ParseReference(l.Addr().String()+"/distroless/static:nonroot", name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		return fmt.Errorf("push base: %w", err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	pinned := l.Addr().String() + "/distroless/static@" + d.String()
	fmt.Println(pinned)
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile+".tmp", []byte(pinned+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(*addrFile+".tmp", *addrFile); err != nil {
			return err
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return srv.Close()
}

// baseIndex builds the stand-in base deterministically (fixed timestamps).
func baseIndex() (v1.ImageIndex, error) {
	layer, err := rootfsLayer()
	if err != nil {
		return nil, err
	}
	var idx v1.ImageIndex = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
		if err != nil {
			return nil, err
		}
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
		cf.Config.User = "65532"
		cf.Config.WorkingDir = "/home/nonroot"
		cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
		img, err = mutate.ConfigFile(img, cf)
		if err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return idx, nil
}

func rootfsLayer() (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	dirs := []struct {
		name string
		mode int64
	}{{"etc/", 0o755}, {"etc/ssl/", 0o755}, {"etc/ssl/certs/", 0o755}, {"home/", 0o755}, {"home/nonroot/", 0o700}, {"tmp/", 0o1777}}
	for _, d := range dirs {
		h := &tar.Header{Name: d.name, Typeflag: tar.TypeDir, Mode: d.mode, ModTime: epoch}
		if d.name == "home/nonroot/" {
			h.Uid, h.Gid = 65532, 65532
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	files := map[string]string{
		"etc/passwd":                        "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		"etc/group":                         "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
		"etc/ssl/certs/ca-certificates.crt": "",
	}
	for _, n := range []string{"etc/group", "etc/passwd", "etc/ssl/certs/ca-certificates.crt"} {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
}
