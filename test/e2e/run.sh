#!/usr/bin/env bash
# run.sh: the e2e harness, one for this machine's local node and for k3d.
#
# Inputs (the design's contract):
#   KUBECONFIG         the cluster the harness may write to (default: the local node of `make e2e`)
#   OCI_DIR            an OCI layout of the buckety image (wins over CONTROLLER_IMAGE)
#   CONTROLLER_IMAGE   a pullable ghcr.io/yolean/buckety-controller@sha256:... reference
#   IMPLEMENTATIONS    comma-separated: kfake (here), redpanda (k3d), versitygw, minio, seaweedfs
#   KEEP_FAILED        true keeps every scenario namespace, not only failed ones
#   E2E_ENV            local (default) or k3d: selects test/e2e/overlays/env-$E2E_ENV
#   IMAGE_LOAD         a command that loads OCI_DIR into the cluster (optional)
#   SCENARIOS          run only these scenario names (comma-separated; optional)
#
# For each implementation it deploys buckety from the rendered release with
# the environment overlay and the implementation overlay (which holds
# buckety-controller.yaml naming the backend by driver type), then runs every
# examples/<driver>/<scenario>/ (and examples/<driver>/<implementation>/<scenario>/)
# that has kustomization.yaml and assert.sh, each in a fresh namespace. A
# passing scenario's namespace is deleted; a failing one is left standing.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export ROOT

E2E_ENV=${E2E_ENV:-local}
IMPLEMENTATIONS=${IMPLEMENTATIONS:-kfake}
KEEP_FAILED=${KEEP_FAILED:-false}
export KUBECONFIG=${KUBECONFIG:-$ROOT/.run/e2e/cluster/controlplane/kubeconfig}
if [ -z "${KUBECTL:-}" ]; then
  if [ -n "${BUCKETY_KUBE_BIN:-}" ]; then KUBECTL=$BUCKETY_KUBE_BIN/kubectl; else KUBECTL=kubectl; fi
fi
export KUBECTL
overlays=$ROOT/test/e2e/overlays

image_args=()
if [ -n "${OCI_DIR:-}" ]; then
  image_args=(--oci-dir "$OCI_DIR")
  if [ -n "${IMAGE_LOAD:-}" ]; then
    echo "e2e: loading $OCI_DIR: $IMAGE_LOAD"
    $IMAGE_LOAD "$OCI_DIR" || { echo "e2e: IMAGE_LOAD failed"; exit 1; }
  fi
elif [ -n "${CONTROLLER_IMAGE:-}" ]; then
  image_args=(--image "$CONTROLLER_IMAGE")
else
  echo "e2e: set OCI_DIR (an OCI layout) or CONTROLLER_IMAGE (ref@sha256:...)" >&2
  exit 2
fi
go build -o "$ROOT/bin/buckety-release" ./cmd/buckety-release || exit 1
# lib.sh asks it for the registered drivers and their Secret keys.
export BUCKETY_RELEASE=$ROOT/bin/buckety-release
# The scenarios start thousands of short Go processes, kubectl above all
# (a kfake suite: 1,624 of them, 342 CPU-seconds), five scenarios side by
# side on cores make test keeps busy. One P and a larger GC goal spend 15 %
# less CPU on each start (kubectl get: 0.145 against 0.170 CPU-seconds,
# 40 alternated runs). E2E_GOMAXPROCS and E2E_GOGC change them.
export GOMAXPROCS=${E2E_GOMAXPROCS:-1} GOGC=${E2E_GOGC:-200}

# driver_of IMPLEMENTATION: the driver the implementation overlay's
# buckety-controller.yaml names, checked against the registry.
driver_of() {
  local drivers
  drivers=$("$BUCKETY_RELEASE" drivers --config "$overlays/$1/buckety-controller.yaml") || return 1
  [ "$(echo "$drivers" | wc -l)" = 1 ] || { echo "e2e: overlay $1 names several drivers: $drivers" >&2; return 1; }
  echo "$drivers"
}

results=()
phases=()
failed=0
declare -A yaml_hash # scenario -> hash of its YAML, to prove it is the same for every implementation
total_start=$SECONDS

deploy() {
  local impl=$1 stage
  stage=$(mktemp -d)
  "$ROOT/bin/buckety-release" render "${image_args[@]}" --out "$stage/release" >/dev/null || return 1
  cp -r "$overlays/env-$E2E_ENV" "$stage/env" || return 1
  cp -r "$overlays/$impl" "$stage/impl" || return 1
  export STAGE=$stage
  if [ -f "$stage/env/prepare.sh" ]; then (cd "$stage/env" && bash ./prepare.sh) || return 1; fi
  if [ -f "$stage/impl/prepare.sh" ]; then (cd "$stage/impl" && bash ./prepare.sh) || return 1; fi
  "$KUBECTL" apply --server-side --force-conflicts -k "$stage/impl" >/dev/null || return 1
  if [ -f "$stage/env/after-apply.sh" ]; then (cd "$stage/env" && bash ./after-apply.sh) || return 1; fi
  for d in buckety-webhook buckety-controller; do
    "$KUBECTL" -n buckety-system rollout status "deploy/$d" --timeout=180s >/dev/null || return 1
  done
  # The scenarios' settings: the environment's, then the implementation's
  # (written by their prepare.sh), fresh for every implementation.
  mkdir -p "$ROOT/.run"
  cat "$stage/env/settings.env" "$stage/impl/settings.env" 2>/dev/null > "$ROOT/.run/e2e-settings.env" || true
  rm -rf "$stage"
}

# yaml_same IMPL DIR: the scenario's YAML is the same as for the
# implementations before (a scenario must not depend on the implementation);
# a difference is recorded as a failure in RESULT_DIR.
yaml_same() {
  local impl=$1 dir=$2 h
  h=$("$KUBECTL" kustomize "$dir" | sha256sum | cut -c1-16)
  if [ -n "${yaml_hash[$dir]:-}" ] && [ "${yaml_hash[$dir]}" != "$h" ]; then
    printf '%-10s %-34s FAIL  (scenario YAML differs from another implementation)\n' "$impl" "$(basename "$dir")" > "$RESULT_DIR/$impl-$(basename "$dir")"
    return 1
  fi
  yaml_hash[$dir]=$h
}

# run_scenario IMPL DIR: one scenario in a fresh namespace. Its result line
# goes to a file of RESULT_DIR, and a failure's output is printed in one
# piece, so scenarios can run side by side.
run_scenario() {
  local impl=$1 dir=$2 name ns start log rc out
  name=$(basename "$dir")
  ns=$(echo "e2e-$impl-$name" | cut -c1-63 | sed 's/-$//')
  out="$RESULT_DIR/$impl-$name"
  "$KUBECTL" delete namespace "$ns" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1
  "$KUBECTL" create namespace "$ns" >/dev/null || { printf '%-10s %-34s FAIL  (cannot create namespace %s)\n' "$impl" "$name" "$ns" > "$out"; return; }
  start=$SECONDS
  log=$(mktemp)
  if "$KUBECTL" apply -n "$ns" -k "$dir" >"$log" 2>&1; then
    (
      set -a
      [ -f "$ROOT/.run/e2e-settings.env" ] && . "$ROOT/.run/e2e-settings.env"
      set +a
      # 15 minutes: on a slow node, five scenarios side by side beside
      # the Go tests, the slowest (every client on three buckets) took
      # just over 10.
      cd "$dir" && NAMESPACE=$ns IMPLEMENTATION=$impl timeout 900 bash ./assert.sh
    ) >>"$log" 2>&1
    rc=$?
  else
    rc=1
  fi
  local dur=$((SECONDS - start))
  if [ $rc -eq 0 ]; then
    printf '%-10s %-34s PASS %4ss\n' "$impl" "$name" "$dur" > "$out"
    if [ "$KEEP_FAILED" != true ]; then
      "$KUBECTL" delete namespace "$ns" --wait=false >/dev/null 2>&1
      echo "$ns" >> "$RESULT_DIR/$impl.deleting"
    fi
  else
    printf '%-10s %-34s FAIL %4ss  (namespace %s left standing)\n' "$impl" "$name" "$dur" "$ns" > "$out"
    {
      echo "==== FAIL $impl/$name (namespace $ns left standing) ===="
      grep -m1 '^FAIL: ' "$log" || true
      echo "---- last lines of the scenario's output ----"
      tail -30 "$log"
    } > "$log.report"
    cat "$log.report"
    rm -f "$log.report"
  fi
  rm -f "$log"
}

# exclusive DIR: the scenario changes what every namespace shares (the
# controller's Deployment, config or process, the webhook, the backend's
# process), so it runs alone. Its assert.sh says so in a line
# "# e2e: exclusive (why)".
exclusive() { grep -q '^# e2e: exclusive' "$1/assert.sh"; }

# slow DIR: one of the longest scenarios, started before the others so
# that the side-by-side phase does not end waiting on a long one started
# last. Its assert.sh says so in a line "# e2e: slow (why)".
slow() { grep -q '^# e2e: slow' "$1/assert.sh"; }

# namespaces_gone IMPL: the passed scenarios' namespaces of IMPL are gone
# before the next implementation's config replaces IMPL's backends: a
# Buckety or access whose backend the config no longer names keeps its
# finalizer (nothing is deleted or revoked blind) until one does, so its
# namespace would never go. A namespace still there after 300s is
# recorded as a failure, named with what holds it.
namespaces_gone() {
  local impl=$1 deadline=$((SECONDS + 300)) ns left
  [ -s "$RESULT_DIR/$impl.deleting" ] || return 0
  while :; do
    # One kubectl for them all: a namespace is left while it is listed.
    # An error (the API server unreachable) counts as nothing gone.
    if left=$("$KUBECTL" get namespace $(cat "$RESULT_DIR/$impl.deleting") --ignore-not-found -o name 2>/dev/null); then
      left=$(echo ${left//namespace\//})
    else
      left=$(echo $(cat "$RESULT_DIR/$impl.deleting"))
    fi
    [ -n "$left" ] || return 0
    [ $SECONDS -lt $deadline ] || break
    sleep 2
  done
  for ns in $left; do
    printf '%-10s %-34s FAIL  (namespace %s still deleting after 300s: %s)\n' "$impl" "(teardown)" "$ns" \
      "$("$KUBECTL" -n "$ns" get bucketies,bucketyaccesses -o jsonpath='{range .items[*]}{.kind}/{.metadata.name} {.status.conditions[?(@.type=="Ready")].message}; {end}' 2>&1)" \
      >> "$RESULT_DIR/$impl-teardown"
  done
  return 1
}

# E2E_PARALLEL scenarios of an implementation run side by side, each in its
# namespace, the slow ones first; then the exclusive ones, one at a time. The scenarios mostly
# wait (on the controller, on rotation graces), so five at a time cost the
# machine little more than three did, and end the suite sooner.
E2E_PARALLEL=${E2E_PARALLEL:-5}
RESULT_DIR=$(mktemp -d)
trap 'rm -rf "$RESULT_DIR"' EXIT

IFS=, read -r -a impls <<<"$IMPLEMENTATIONS"
for impl in "${impls[@]}"; do
  if ! driver=$(driver_of "$impl"); then
    failed=1
    results+=("$(printf '%-10s %-34s FAIL' "$impl" "(no driver: see above)")")
    continue
  fi
  echo "e2e: implementation $impl (driver $driver, environment $E2E_ENV)"
  phase=$SECONDS
  if ! deploy "$impl"; then
    "$KUBECTL" -n buckety-system get pods -o wide 2>&1 | tail -5
    "$KUBECTL" -n buckety-system logs deploy/buckety-webhook --tail=10 2>&1
    "$KUBECTL" -n buckety-system logs deploy/buckety-controller --tail=10 2>&1
    failed=1
    results+=("$(printf '%-10s %-34s FAIL' "$impl" "(deploy buckety)")")
    continue
  fi
  all=() shared=() alone=() later=()
  for dir in "examples/$driver"/*/ "examples/$driver/$impl"/*/; do
    dir=${dir%/}
    [ -f "$dir/kustomization.yaml" ] && [ -f "$dir/assert.sh" ] || continue
    if [ -n "${SCENARIOS:-}" ] && [[ ",$SCENARIOS," != *",$(basename "$dir"),"* ]]; then continue; fi
    all+=("$dir")
    yaml_same "$impl" "$dir" || continue
    if exclusive "$dir"; then alone+=("$dir"); elif slow "$dir"; then shared+=("$dir"); else later+=("$dir"); fi
  done
  shared+=(${later[@]+"${later[@]}"})
  timings="deployed in $((SECONDS - phase))s"
  phase=$SECONDS
  for dir in "${shared[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$E2E_PARALLEL" ]; do wait -n; done
    echo "e2e: $impl/$(basename "$dir")"
    run_scenario "$impl" "$dir" &
  done
  wait
  timings+=", ${#shared[@]} side by side in $((SECONDS - phase))s"
  phase=$SECONDS
  for dir in "${alone[@]}"; do
    echo "e2e: $impl/$(basename "$dir") (alone)"
    run_scenario "$impl" "$dir"
  done
  # Where the suite's time goes, for make test's budget (docs/development.md).
  timings+=", ${#alone[@]} alone in $((SECONDS - phase))s"
  phase=$SECONDS
  if ! namespaces_gone "$impl"; then
    failed=1
    while read -r line; do results+=("$line"); done < "$RESULT_DIR/$impl-teardown"
  fi
  timings+=", namespaces gone in $((SECONDS - phase))s"
  phases+=("$(printf '%-10s %s' "$impl" "$timings")")
  for dir in "${all[@]}"; do
    f="$RESULT_DIR/$impl-$(basename "$dir")"
    if [ -s "$f" ]; then results+=("$(cat "$f")"); else results+=("$(printf '%-10s %-34s FAIL  (no result)' "$impl" "$(basename "$dir")")"); fi
    grep -q ' PASS ' "$f" 2>/dev/null || failed=1
  done
done

echo
echo "e2e results (environment $E2E_ENV):"
printf '%s\n' "${results[@]}"
pass=$(printf '%s\n' "${results[@]}" | grep -c ' PASS ' || true)
fail=$(printf '%s\n' "${results[@]}" | grep -c ' FAIL' || true)
echo "e2e wall time: $((SECONDS - total_start))s"
printf '%s\n' ${phases[@]+"${phases[@]}"}
echo "$pass passed, $fail failed"
exit $failed
