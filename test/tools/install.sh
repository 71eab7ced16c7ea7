#!/usr/bin/env bash
# install.sh builds pinned test binaries into a per-version cache outside the
# clone and prints the absolute path of each one, a line per name (for
# `clients`, a directory: see below). A binary already in the cache is reused,
# so CI on the same machine pays the cold build once; a version bump here lands
# in a new directory and never reuses a stale binary.
#
#   test/tools/install.sh kube-apiserver etcd kubectl
#
# `clients` is not one binary but the real Kafka and S3 clients the tests run
# against the local backends (kcat, confluent-kafka and boto3 for Python, the
# AWS CLI, rclone, kafkajs for Node): for it the script prints a directory of
# wrapper scripts, bin/, each exec'ing one client with exactly the environment
# it needs (bin/VERSIONS lists what is in it). Tests find it in
# BUCKETY_CLIENTS.
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
# SeaweedFS (S3 and the AWS IAM API on one port). The module proxy serves
# only this pseudo-version (its release tags are not semver). Its go.mod has
# replace lines, so `go install` refuses it: the module source is downloaded,
# copied to a writable directory and ./weed built there as the main module.
# The commit is stamped into `weed version` as its own builds do; the source
# says 4.53.
SEAWEEDFS_VERSION=v0.0.0-20261109003541-7506e5f91cd6
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
# The real clients (tool `clients`): Debian bookworm packages at these
# versions, downloaded with their dependency closure by apt (checked against
# the signed package lists) and unpacked with dpkg-deb -x into the cache; as
# with promtool nothing enters dpkg's state and no service is started. A
# dependency the machine already has installed is not downloaded: the
# machine's copy is used. The Python clients run on Debian's /usr/bin/python3,
# whose ABI the packages are built for. kafkajs comes from the npm registry,
# pinned with its integrity in test/tools/clients/package-lock.json (npm ci
# checks the tarball against it).
CLIENT_DEBS="kcat=1.7.1-2 librdkafka1=2.0.2-1 python3-confluent-kafka=1.7.0-4 python3-boto3=1.26.27+dfsg-1 rclone=1.60.1+dfsg-2+b5 awscli=2.9.19-1"
# Bump when the layout of the clients directory or its wrappers changes, so
# that a cached directory of the old layout is not reused.
CLIENTS_LAYOUT=1

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

# need_debs makes sure the machine has what a tool's build runs, given as
# pairs "command:package" (a command with a slash is a file): a fresh
# machine may have only Go, make, git and gcc. Missing packages are
# installed from Debian as root (apt's state, once, with a package-list
# update when the lists are missing or stale); anyone else is told what to
# install. Output goes to stderr: stdout carries the tools' paths.
need_debs() {
  local pair cmd missing=()
  for pair in "$@"; do
    cmd=${pair%%:*}
    case $cmd in
      */*) [ -e "$cmd" ] ;;
      *) command -v "$cmd" >/dev/null ;;
    esac || missing+=("${pair#*:}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "install.sh: this machine lacks ${missing[*]}: apt-get install ${missing[*]} (as root), then run again" >&2
    return 1
  fi
  echo "install.sh: installing Debian's ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
    { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2; } ||
    { echo "install.sh: apt-get install ${missing[*]} failed" >&2; return 1; }
}

# need_bookworm stops, naming the machine's release, where a tool comes from
# Debian 12 (bookworm) packages at pinned versions (promtool, the clients):
# another release's archive has neither those versions nor, for the Python
# clients, bookworm's python3 ABI.
need_bookworm() {
  local codename="" pretty="an unknown system"
  if [ -r /etc/os-release ]; then
    # shellcheck disable=SC1091 # the machine's, read at run time
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    # shellcheck disable=SC1091
    pretty=$(. /etc/os-release && echo "${PRETTY_NAME:-$codename}")
  fi
  [ "$codename" = bookworm ] && return 0
  echo "install.sh: $1 comes from Debian 12 (bookworm) packages at pinned versions; this machine is $pretty: use Debian 12" >&2
  return 1
}

# dir_for prints the cache directory of a tool: one per pinned version.
dir_for() {
  case $1 in
    kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|etcd)
      echo "$cache/k8s-$K8S_VERSION-etcd-$ETCD_VERSION" ;;
    versitygw) echo "$cache/versitygw-$VERSITYGW_VERSION" ;;
    minio) echo "$cache/minio-$MINIO_VERSION-$MINIO_RELEASE" ;;
    seaweedfs) echo "$cache/seaweedfs-$SEAWEEDFS_VERSION" ;;
    contain) echo "$cache/contain-$CONTAIN_VERSION" ;;
    promtool) echo "$cache/promtool-$PROMETHEUS_DEB_VERSION" ;;
    # Named by a digest of every pin, so a bump of any lands in a new
    # directory.
    clients) echo "$cache/clients-$( { echo "$CLIENTS_LAYOUT $CLIENT_DEBS"; cat "$here/clients/package-lock.json"; } | sha256sum | cut -c1-16)" ;;
    *) echo "install.sh: unknown tool $1 (known: kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet etcd versitygw minio seaweedfs contain promtool clients)" >&2; return 2 ;;
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
    seaweedfs)
      # Downloaded from the empty build directory, outside any module, so
      # no go.mod or go.sum is touched; the copy is writable, unlike the
      # module cache.
      local src
      src=$(cd "$tmp" && GOWORK=off go mod download -json "github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
      [ -n "$src" ] && [ -f "$src/go.mod" ] || { echo "install.sh: go mod download github.com/seaweedfs/seaweedfs@$SEAWEEDFS_VERSION gave no directory" >&2; return 1; }
      cp -R "$src" "$tmp/src"
      chmod -R u+w "$tmp/src"
      (cd "$tmp/src" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/seaweedfs/seaweedfs/weed/util/version.COMMIT=${SEAWEEDFS_VERSION##*-}" -o "$tmp/$name" ./weed)
      rm -rf "$tmp/src" ;;
    contain)
      need_debs curl:curl /etc/ssl/certs/ca-certificates.crt:ca-certificates
      curl -fsSL --retry 3 -o "$tmp/contain.tgz" "https://registry.npmjs.org/contain-linux-x64/-/contain-linux-x64-$CONTAIN_VERSION.tgz"
      echo "$CONTAIN_SHA256  $tmp/contain.tgz" | sha256sum -c --quiet -
      tar -xzf "$tmp/contain.tgz" -C "$tmp" package/bin/contain
      mv "$tmp/package/bin/contain" "$tmp/contain" ;;
    promtool)
      need_bookworm promtool || return 1
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

# wrapper OUT [NAME=VALUE...] -- CMD [ARG...] writes the executable script
# OUT that execs CMD ARGS (and its own arguments) with exactly those
# variables set by us. Where PYTHONPATH is set, PYTHONHOME is unset, so that a
# pyenv or venv Python in the caller's environment cannot redirect Debian's
# python3.
wrapper() {
  local out=$1
  shift
  {
    echo '#!/bin/bash'
    echo '# Written by test/tools/install.sh clients; bin/VERSIONS lists the versions.'
    while [ "$1" != -- ]; do
      printf 'export %s=%q\n' "${1%%=*}" "${1#*=}"
      [ "${1%%=*}" != PYTHONPATH ] || echo 'unset PYTHONHOME'
      shift
    done
    shift
    printf 'exec'; printf ' %q' "$@"; printf ' "$@"\n'
  } > "$out"
  chmod 0755 "$out"
}

# clients installs the real clients into their cache directory (see
# CLIENT_DEBS) and prints its bin/. The directory is built beside the cache
# under a temporary name and renamed into place whole, so a directory that
# exists is complete; a concurrent install that loses the rename discards
# its copy.
clients() {
  local dir tmp pin pkg deb root multiarch python node
  dir=$(dir_for clients)
  if [ -f "$dir/bin/VERSIONS" ]; then echo "$dir/bin"; return 0; fi
  python=/usr/bin/python3
  # The Python clients are Debian's, for Debian's python3; kafkajs needs
  # node and npm.
  need_bookworm "the real clients (kcat, confluent-kafka, boto3, the AWS CLI, rclone)" || return 1
  need_debs "$python:python3" node:nodejs npm:npm
  node=$(command -v node)
  mkdir -p "$cache"
  echo "install.sh: installing the clients into $dir" >&2
  tmp=$(mktemp -d "$cache/.clients.XXXXXX")
  chmod 0755 "$tmp"
  mkdir -p "$tmp/debs/partial" "$tmp/root" "$tmp/node" "$tmp/bin"
  # --download-only resolves the pins' dependency closure against what the
  # machine has installed and only fetches the .debs. A fresh machine may
  # have no package lists yet (or stale ones): update once and retry.
  local get=(apt-get install --download-only -qq -y --no-install-recommends -o "Dir::Cache::archives=$tmp/debs")
  # shellcheck disable=SC2086 # CLIENT_DEBS is a word list
  "${get[@]}" $CLIENT_DEBS >/dev/null 2>&1 || { apt-get update -qq && "${get[@]}" $CLIENT_DEBS >/dev/null; } ||
    { rm -rf "$tmp"; echo "install.sh: clients: cannot download Debian's $CLIENT_DEBS (a pin superseded? bump it in CLIENT_DEBS to apt-cache policy PACKAGE's candidate)" >&2; return 1; }
  # A pin the machine already has installed is not downloaded by install;
  # fetch it by name so the cache holds every client.
  for pin in $CLIENT_DEBS; do
    pkg=${pin%%=*}
    compgen -G "$tmp/debs/${pkg}_*.deb" >/dev/null ||
      (cd "$tmp/debs" && apt-get download -qq "$pin") ||
      { rm -rf "$tmp"; echo "install.sh: clients: cannot download Debian's $pin (superseded? bump it in CLIENT_DEBS)" >&2; return 1; }
  done
  for deb in "$tmp"/debs/*.deb; do
    dpkg-deb -x "$deb" "$tmp/root"
    echo "deb $(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >> "$tmp/bin/VERSIONS.debs"
  done
  rm -rf "$tmp/debs"
  cp "$here/clients/package.json" "$here/clients/package-lock.json" "$tmp/node/"
  (cd "$tmp/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    { rm -rf "$tmp"; echo "install.sh: clients: npm ci of test/tools/clients failed (see above)" >&2; return 1; }
  # The wrappers name the final directory, which exists once renamed.
  root=$dir/root
  multiarch=$(uname -m)-linux-gnu
  wrapper "$tmp/bin/kcat" "LD_LIBRARY_PATH=$root/usr/lib/$multiarch" -- "$root/usr/bin/kcat"
  wrapper "$tmp/bin/python3" "PYTHONPATH=$root/usr/lib/python3/dist-packages" \
    "LD_LIBRARY_PATH=$root/usr/lib/$multiarch" PYTHONNOUSERSITE=1 -- "$python"
  # Debian's aws is a script for /usr/bin/python3: run it with the path set.
  wrapper "$tmp/bin/aws" "PYTHONPATH=$root/usr/lib/python3/dist-packages" PYTHONNOUSERSITE=1 -- "$python" "$root/usr/bin/aws"
  wrapper "$tmp/bin/rclone" -- "$root/usr/bin/rclone"
  wrapper "$tmp/bin/node" "NODE_PATH=$dir/node/node_modules" -- "$node"
  {
    echo "# The clients in this directory (test/tools/install.sh clients): NAME VERSION [FROM]."
    for pin in $CLIENT_DEBS; do echo "${pin%%=*} ${pin#*=} debian"; done
    echo "kafkajs $(cd "$tmp/node" && "$node" -p 'require("kafkajs/package.json").version') npm"
    echo "python3 $("$python" -c 'import platform; print(platform.python_version())') $python (the machine's)"
    echo "node $("$node" --version) $node (the machine's)"
    echo "# Every unpacked .deb, the pins' dependency closure included:"
    sort "$tmp/bin/VERSIONS.debs"
  } > "$tmp/bin/VERSIONS"
  rm "$tmp/bin/VERSIONS.debs"
  # Only a complete directory has bin/VERSIONS; one without is a leftover.
  [ -f "$dir/bin/VERSIONS" ] || rm -rf "$dir"
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  [ -f "$dir/bin/VERSIONS" ] || { echo "install.sh: clients: $dir is incomplete" >&2; return 1; }
  # Smoke: each wrapper runs its client from the final directory.
  "$dir/bin/kcat" -V >/dev/null &&
    "$dir/bin/python3" -c 'import confluent_kafka, boto3' &&
    "$dir/bin/aws" --version >/dev/null &&
    "$dir/bin/rclone" version >/dev/null &&
    "$dir/bin/node" -e 'require("kafkajs")' ||
    { rm -rf "$dir"; echo "install.sh: clients: a client does not run from $dir/bin (see above); removed it" >&2; return 1; }
  echo "$dir/bin"
}

if [ $# -eq 0 ]; then
  echo "usage: $0 TOOL..." >&2
  exit 2
fi
for t in "$@"; do
  case $t in
    clients) clients ;;
    *) build "$t" ;;
  esac
done
