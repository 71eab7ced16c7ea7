#!/usr/bin/env bash
# local.sh: the e2e suite on this machine. Like the GitHub workflow's job
# body, it only prepares an environment and calls run.sh: start the local
# node with the backends (broker, VersityGW, MinIO, and SeaweedFS when
# IMPLEMENTATIONS names it) and the images, run the harness, and tear
# everything down (unless KEEP_FAILED=true and a scenario failed, so its
# namespace can be inspected, or KEEP=true, kept whatever the outcome, to
# run a scenario's assert.sh by hand; `make stop-e2e` then).
set -uo pipefail
cd "$(dirname "$0")/../.."
state=.run/e2e
# The suite runs on its own node, whatever cluster the caller's KUBECONFIG
# names (a README reader has exported make run's): buckety-local would take
# it for an existing cluster to deploy onto.
unset KUBECONFIG
# KEEP=true keeps the scenarios' namespaces too (run.sh's KEEP_FAILED).
if [ "${KEEP:-false}" = true ]; then export KEEP_FAILED=true; fi
IMPLEMENTATIONS=${IMPLEMENTATIONS:-kfake,versitygw,minio,seaweedfs}
# SeaweedFS is started only when a run tests it: it needs BUCKETY_SEAWEEDFS,
# a binary that takes minutes to build cold, which a run of the other
# implementations by hand need not have.
# The backends' outage twins: claims-and-outage hangs its implementation's
# twin, not the backend the other scenarios use, so it runs beside them.
up_flags=(--outage-twins)
if [[ ",$IMPLEMENTATIONS," == *",seaweedfs,"* ]]; then up_flags+=(--seaweedfs); fi
# Interrupted (Ctrl-C, a CI job's timeout): the scenarios stop and the
# node and backends go down, as at the end of a run; the next run on this
# machine must not share its cores with this one's servers.
run_pid=
variants_pid=
interrupted() {
  trap - INT TERM HUP
  echo "e2e: interrupted; stopping the scenarios and tearing the environment down" >&2
  [ -z "$run_pid" ] || kill -TERM -- "-$run_pid" 2>/dev/null
  [ -z "$variants_pid" ] || kill -TERM "$variants_pid" 2>/dev/null
  go run ./test/localstack/cmd/buckety-local down --dir "$state"
  exit 130
}
trap interrupted INT TERM HUP
# A failed start is torn down (unless KEEP_FAILED=true): the suite wants a
# clean node, and the next run on this machine must not meet a half-started
# one.
if ! go run ./test/localstack/cmd/buckety-local up --no-deploy --dir "$state" "${up_flags[@]}"; then
  [ "${KEEP_FAILED:-false}" = true ] || go run ./test/localstack/cmd/buckety-local down --dir "$state"
  exit 1
fi
# The driver-version scenario needs the controller rebuilt with the next
# patch and the next major of every driver: build and load those images.
# The drivers and their versions come from the registry (drivers/all).
# variants NAME (next-patch or next-major)
variants() {
  local name=$1 out="$PWD/$state/oci-$1" flags
  flags=$(go run ./cmd/buckety-release drivers --ldflags "$name") || return 1
  LDFLAGS="-s -w $flags" \
    PLATFORMS="linux/$(go env GOARCH)" IMAGE="ghcr.io/yolean/buckety-controller:e2e-$name" OUT="$out" hack/with-local-base.sh hack/image.sh >/dev/null 2>&1 || return 1
  go run ./test/e2e/e2etool load-image "$state" "$out" || return 1
  go run ./cmd/buckety-release render --oci-dir "$out" --out "$out.release" >/dev/null || return 1
  sed -n 's/.*image: \(ghcr.io[^ ]*\)$/\1/p' "$out.release/buckety.yaml" | head -1
}
# They are built in the background while the scenarios before the first
# driver-version run (a minute and more saved): each reference lands in the
# file E2E_IMAGE_NEXT_*_FILE names, which lib.sh waits for; a failed build
# leaves NAME.failed instead.
vdir=$PWD/$state/variants
rm -rf "$vdir" && mkdir -p "$vdir"
(
  for v in next-patch next-major; do
    if ref=$(variants "$v") && [ -n "$ref" ]; then
      echo "$ref" > "$vdir/$v.tmp" && mv "$vdir/$v.tmp" "$vdir/$v"
    else
      echo "e2e: building the $v image failed" >&2
      : > "$vdir/$v.failed"
    fi
  done
) &
variants_pid=$!
export E2E_IMAGE_NEXT_PATCH_FILE=$vdir/next-patch E2E_IMAGE_NEXT_MAJOR_FILE=$vdir/next-major
rc=0
# In a process group of its own (setsid), waited for in the background: a
# signal then reaches this script at once, and its trap stops the
# scenarios run.sh started, by the group's ID.
KUBECONFIG=$PWD/$state/cluster/controlplane/kubeconfig OCI_DIR=$PWD/$state/oci E2E_BACKENDS_ENV=$PWD/$state/backends.env \
  E2E_ENV=local IMPLEMENTATIONS=$IMPLEMENTATIONS setsid test/e2e/run.sh &
run_pid=$!
wait "$run_pid" || rc=$?
# Nothing the script started outlives it: the builds end on their own.
wait "$variants_pid" || true
if [ $rc -ne 0 ] && [ "${KEEP_FAILED:-false}" = true ]; then
  echo "e2e: failed; environment kept (KUBECONFIG=$PWD/$state/cluster/controlplane/kubeconfig); make stop-e2e removes it"
  exit $rc
fi
if [ "${KEEP:-false}" = true ]; then
  echo "e2e: environment kept (KEEP=true): export KUBECONFIG=$PWD/$state/cluster/controlplane/kubeconfig; make stop-e2e removes it"
  exit $rc
fi
go run ./test/localstack/cmd/buckety-local down --dir "$state" || rc=1
exit $rc
