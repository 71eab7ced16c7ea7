#!/usr/bin/env bash
# image.sh builds the buckety image as an OCI layout with contain, without
# pushing: binaries for each of PLATFORMS (CGO off, -trimpath,
# -buildvcs=false, version ldflags), then `contain build --push=false`.
# PLATFORMS defaults to linux/amd64,linux/arm64 (releases); `make run` and
# the local e2e set it to the host's platform only, which halves a cold
# build.
#
#   BASE_IMAGE=<ref@sha256:...> [IMAGE=ghcr.io/yolean/buckety-controller:TAG] [OUT=oci] [PLATFORMS=linux/amd64,linux/arm64] hack/image.sh
#
# Prints the built image reference (tag@sha256:digest) on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${BASE_IMAGE:=$(cat hack/base-image)}"
case "$BASE_IMAGE" in
  *@sha256:*) ;;
  *) echo "image.sh: base image $BASE_IMAGE is not pinned by digest: run 'make pin-base' (needs the registry), or set BASE_IMAGE=ref@sha256:..." >&2; exit 2 ;;
esac
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
IMAGE=${IMAGE:-ghcr.io/yolean/buckety-controller:$VERSION}
OUT=${OUT:-oci}
LDFLAGS=${LDFLAGS:-"-s -w -X github.com/Yolean/buckety-controller/internal/version.Version=$VERSION"}
CONTAIN=${CONTAIN:-$(test/tools/install.sh contain)}

# contain.yaml reads the binaries from dist/: two builds at once in one tree
# (the image and local-node tests of `go test ./...` run in parallel) would
# mix each other's binaries, so a build holds a lock on dist/ throughout.
mkdir -p dist
exec 9>dist/.lock
flock 9

# A developer's GOFLAGS (-tags buckety_testhooks, -race, -cover) must not
# reach a release image: the build flags are this script's alone.
export GOFLAGS=

# contain reads PLATFORMS itself: contain.yaml names no platforms.
export PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
for platform in ${PLATFORMS//,/ }; do
  case "$platform" in
    linux/amd64|linux/arm64) arch=${platform#linux/} ;;
    *) echo "image.sh: PLATFORMS: unsupported platform $platform (want linux/amd64 and/or linux/arm64)" >&2; exit 2 ;;
  esac
  for bin in buckety-controller buckety-webhook; do
    CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -buildvcs=false -ldflags "$LDFLAGS" \
      -o "dist/linux/$arch/$bin" "./cmd/$bin"
  done
done
rm -rf "$OUT"
BASE_IMAGE=$BASE_IMAGE IMAGE=$IMAGE "$CONTAIN" build --logger plain --platforms-env-require --push=false --output "$OUT" --file-output "$OUT.build.json" >&2
sed -n 's/.*"tag":"\([^"]*\)".*/\1/p' "$OUT.build.json"
