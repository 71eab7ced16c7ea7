#!/usr/bin/env bash
# install.sh builds pinned test binaries into a per-version cache outside the
# clone and prints the absolute path of each one, a line per name. A binary
# already in the cache is reused, so CI on the same machine pays the cold build
# once; a version bump here lands in a new directory and never reuses a stale
# binary.
#
#   test/tools/install.sh kube-apiserver etcd kubectl
#
# BUCKETY_CACHE overrides the cache root (default ~/.cache/buckety).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
VERSITYGW_VERSION=v1.8.0
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
# The release MinIO's admin API reports for that commit (its commit time),
# in MinIO's release-tag and RFC 3339 forms.
MINIO_RELEASE=2026-02-12T20-18-48Z
MINIO_RELEASE_TIME=2026-02-12T20:18:48Z
# contain ships as an npm package holding a prebuilt binary; its tarball is
# fetched from the npm registry and checked against this SHA-256.
CONTAIN_VERSION=1.1.0
CONTAIN_SHA256=46d858c17ae143cfbb86c6a3fdd559e17c638ff716e84b5df44d7552b955b9b5
# promtool (Prometheus' rule unit tests) comes from Debian's prometheus
# package: the .deb is fetched with apt-get download (apt checks it against
# the signed package lists) and only usr/bin/promtool is unpacked. Nothing is
# installed into dpkg's state and no prometheus service is started. The newest
# cmd/promtool does not build from the module proxy here.
PROMETHEUS_DEB_VERSION=2.42.0+ds-5+deb12u1

cache=${BUCKETY_CACHE:-$HOME/.cache/buckety}

k8s_ldflags() {
  local v=${K8S_VERSION#v} major minor f="-s -w"
  major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}

# dir_for prints the cache directory of a tool: one per pinned version.
dir_for() {
  case $1 in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|etcd)
      echo "$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION" ;;
    versitygw) echo "$cache/versitygw-$VERSITYGW_VERSION" ;;
    minio) echo "$cache/minio-$MINIO_VERSION-$MINIO_RELEASE" ;;
    contain) echo "$cache/contain-$CONTAIN_VERSION" ;;
    promtool) echo "$cache/promtool-$PROMETHEUS_DEB_VERSION" ;;
    *) echo "install.sh: unknown tool $1 (known: kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet etcd versitygw minio contain promtool)" >&2; return 2 ;;
  esac
}

build() {
  local name=$1 dir tmp gobin
  dir=$(dir_for "$name")
  if [ -x "$dir/$name" ]; then echo "$dir/$name"; return 0; fi
  mkdir -p "$dir"
  echo "install.sh: building $name into $dir (cold builds take minutes)" >&2
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  case $name in
    etcd)
      (cd "$here/etcd" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/$name" ./cmd/etcd) ;;
    versitygw)
      GOBIN=$tmp CGO_ENABLED=0 go install -trimpath "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" ;;
    minio)
      # Stamped as MinIO's own release builds are (buildscripts/gen-ldflags.go):
      # the admin API then reports the release, which buckety checks.
      local pkg=github.com/minio/minio/cmd
      GOBIN=$tmp CGO_ENABLED=0 go install -trimpath -ldflags "-s -w -X $pkg.Version=$MINIO_RELEASE_TIME -X $pkg.ReleaseTag=RELEASE.$MINIO_RELEASE -X $pkg.CommitID=${MINIO_VERSION##*-} -X $pkg.ShortCommitID=${MINIO_VERSION##*-}" "github.com/minio/minio@$MINIO_VERSION" ;;
    contain)
      command -v curl >/dev/null || { echo "install.sh: contain is fetched from the npm registry with curl, which this machine lacks: apt-get install curl" >&2; return 1; }
      curl -fsSL --retry 3 -o "$tmp/contain.tgz" "https://registry.npmjs.org/contain-linux-x64/-/contain-linux-x64-$CONTAIN_VERSION.tgz"
      echo "$CONTAIN_SHA256  $tmp/contain.tgz" | sha256sum -c --quiet -
      tar -xzf "$tmp/contain.tgz" -C "$tmp" package/bin/contain
      mv "$tmp/package/bin/contain" "$tmp/contain" ;;
    promtool)
      # A fresh machine may have no package lists yet: update once and retry.
      (cd "$tmp" && { apt-get download -qq "prometheus=$PROMETHEUS_DEB_VERSION" 2>/dev/null ||
        { apt-get update -qq && apt-get download -qq "prometheus=$PROMETHEUS_DEB_VERSION"; }; }) ||
        { echo "install.sh: cannot download Debian's prometheus $PROMETHEUS_DEB_VERSION (superseded? bump PROMETHEUS_DEB_VERSION to apt-cache policy prometheus's candidate)" >&2; return 1; }
      dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/deb"
      mv "$tmp/deb/usr/bin/promtool" "$tmp/promtool" ;;
    *)
      (cd "$here/kube" && CGO_ENABLED=0 go build -trimpath -ldflags "$(k8s_ldflags)" -o "$tmp/$name" "k8s.io/kubernetes/cmd/$name") ;;
  esac
  mv "$tmp/$name" "$dir/$name"
  rm -rf "$tmp"
  echo "$dir/$name"
}

if [ $# -eq 0 ]; then
  echo "usage: $0 TOOL..." >&2
  exit 2
fi
for t in "$@"; do build "$t"; done
