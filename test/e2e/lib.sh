# lib.sh: shared helpers for examples/*/*/assert.sh. An assert.sh runs the
# same way from test/e2e/run.sh or by hand against a still-standing
# namespace:
#
#   NAMESPACE=e2e-kfake-happy-path examples/kadm/happy-path/assert.sh
#
# Environment: NAMESPACE (required), KUBECTL (default kubectl),
# PROBE_IMAGE, PROBE_HOST_NETWORK (true where backends are on the node's
# loopback), E2E_TIMEOUT (seconds per wait, default 120).
#
# A scenario every driver has is written once, as a function of
# test/e2e/scenarios/<scenario>.sh (cluster-api's QuickStartSpec is the
# model): its examples/<driver>/<scenario>/assert.sh sources this file
# with the driver's name (`. lib.sh kadm`, which loads
# test/e2e/drivers/kadm.sh: the driver's words, admin operations and
# Secret keys), defines the scenario's hooks for what only its driver
# checks, and calls the function with the driver's values.
set -euo pipefail
: "${NAMESPACE:?set NAMESPACE to the scenario namespace}"
KUBECTL=${KUBECTL:-kubectl}
PROBE_IMAGE=${PROBE_IMAGE:-registry.local/buckety/probe:v1}
PROBE_HOST_NETWORK=${PROBE_HOST_NETWORK:-false}
E2E_TIMEOUT=${E2E_TIMEOUT:-120}
# E2E_BULK_TIMEOUT: the backstop of work on thousands of objects or
# records (a fill, a drain, a deletion that empties a bucket), which a
# server under the load of the whole suite does at a fraction of its idle
# speed. Only a failure waits for it.
E2E_BULK_TIMEOUT=${E2E_BULK_TIMEOUT:-$((3 * E2E_TIMEOUT))}
SYSTEM_NS=${SYSTEM_NS:-buckety-system}

k() { "$KUBECTL" -n "$NAMESPACE" "$@"; }
# py runs Debian's python3 through the clients' wrapper (install.sh
# clients makes sure of it), or python3 from PATH where the clients are
# not installed: the scripts' one interpreter for JSON and HTTP, so a
# fresh machine needs neither jq nor a python3 of its own.
py() { "${BUCKETY_CLIENTS:+$BUCKETY_CLIENTS/}python3" "$@"; }

# describe prints what a person debugging the failure wants to see.
describe() {
  echo "---- state of namespace $NAMESPACE ----" >&2
  k get bky,bkya,secrets,jobs,pods -o wide >&2 2>&1 || true
  k describe buckety-all >&2 2>&1 | tail -40 || true
  echo "---- buckety-controller log (last lines) ----" >&2
  "$KUBECTL" -n "$SYSTEM_NS" logs deploy/buckety-controller --tail=5 >&2 2>&1 || true
}

fail() {
  echo "FAIL: $*" >&2
  describe
  exit 1
}

step() { echo "--- $*"; }

# expect_eq WHAT EXPECTED SEEN
expect_eq() { [ "$2" = "$3" ] || fail "$1: expected '$2', seen '$3'"; }

# wide_column KIND NAME COLUMN: the value of COLUMN (its header, as kubectl
# prints it) in `kubectl get KIND NAME -o wide`, as a person reads it.
wide_column() {
  local out
  out=$(k get "$1" "$2" -o wide) || fail "kubectl get $1 $2 -o wide: $out"
  # By the header's offset: kubectl aligns each value under its header,
  # and an empty value would shift a count of fields.
  awk -v col="$3" 'NR == 1 { c = index($0 " ", col " "); next }
    NR == 2 && c { v = substr($0, c); sub(/ .*/, "", v); print v; found = 1 } END { exit !found }' <<<"$out" || fail "kubectl get $1 $2 -o wide: no column $3 in: $out"
}

# expect_contains WHAT NEEDLE HAYSTACK
expect_contains() { case "$3" in *"$2"*) ;; *) fail "$1: expected to contain '$2', seen '$3'" ;; esac; }
expect_not_contains() { case "$3" in *"$2"*) fail "$1: expected not to contain '$2', seen '$3'" ;; esac; }

# obj KIND/NAME: the two words people type, "buckety orders", so every
# helper exercises the natural kubectl form (kubectl get buckety orders);
# a CRD category spelled like a singular would break it.
obj() { printf '%s\n%s\n' "${1%%/*}" "${1#*/}"; }

# jp KIND/NAME JSONPATH: kubectl get KIND NAME -o jsonpath=...
jp() { local kind name; { read -r kind; read -r name; } < <(obj "$1"); k get "$kind" "$name" -o jsonpath="$2"; }

cond() { jp "$1" "{.status.conditions[?(@.type==\"$2\")].$3}" 2>/dev/null || true; }

# wait_cond RESOURCE TYPE STATUS [REASON]: waits until the condition has the
# status (and reason); on timeout prints what it saw.
wait_cond() {
  local res=$1 typ=$2 want=$3 reason=${4:-} deadline=$((SECONDS + E2E_TIMEOUT)) seen kind name
  { read -r kind; read -r name; } < <(obj "$res")
  if [ -z "$reason" ]; then
    # What a user types: kubectl wait --for=create, then kubectl wait
    # --for=condition=Ready buckety/NAME (which fails at once on a missing
    # object). Each is one watch, not a kubectl a second: the suite's
    # thousands of kubectl starts are a large share of make test's CPU.
    k wait --for=create "$kind/$name" --timeout="${E2E_TIMEOUT}s" >/dev/null 2>&1 || fail "$res: expected it to exist"
    if k wait --for="condition=$typ=$want" "$kind/$name" --timeout="$((deadline - SECONDS + 1))s" >/dev/null 2>&1; then return 0; fi
    fail "$res: expected $typ=$want, seen $typ=$(cond "$res" "$typ" status) ($(cond "$res" "$typ" reason): $(cond "$res" "$typ" message))"
  fi
  # A status and a reason: kubectl wait takes one of them, so the two are
  # read together, STATUS/REASON, once a second.
  while :; do
    seen=$(jp "$res" "{range .status.conditions[?(@.type==\"$typ\")]}{.status}/{.reason}{end}" 2>/dev/null || true)
    if [ "${seen%%/*}" = "$want" ] && [ "${seen#*/}" = "$reason" ]; then return 0; fi
    [ $SECONDS -lt $deadline ] || fail "$res: expected $typ=$want ($reason), seen $typ=${seen%%/*} (${seen#*/}: $(cond "$res" "$typ" message))"
    sleep 1
  done
}

# wait_gone RESOURCE: kubectl wait --for=delete (at once when it is gone).
wait_gone() {
  local kind name
  { read -r kind; read -r name; } < <(obj "$1")
  k wait --for=delete "$kind/$name" --timeout="${E2E_TIMEOUT}s" >/dev/null 2>&1 || fail "$1: expected it deleted, still there"
}

# secret_keys NAME: the Secret's keys, sorted, comma-separated.
secret_keys() { k get secret "$1" -o go-template='{{range $k, $v := .data}}{{$k}}{{"\n"}}{{end}}' | LC_ALL=C sort | paste -sd, -; }

# The repository this lib.sh is in.
LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# release_tool ARGS...: buckety-release of this checkout (BUCKETY_RELEASE,
# which run.sh builds once, or go run).
release_tool() {
  if [ -n "${BUCKETY_RELEASE:-}" ]; then "$BUCKETY_RELEASE" "$@"; else (cd "$LIB_ROOT" && go run ./cmd/buckety-release "$@"); fi
}

# expect_secret_keys SECRET DRIVER [OPTIONAL-KEY...]: the Secret has exactly
# the keys DRIVER's published secret schema declares as always present,
# plus the optional keys named (the scenario knows when they apply), plus
# the keys of a user of its own where the implementation scopes kadm.
expect_secret_keys() {
  local secret=$1 want; shift
  local extra=()
  if [ "$1" = kadm ] && scoped_kafka; then extra=("${kafka_scoped_keys[@]}"); fi
  want=$(release_tool secret-keys --root "$LIB_ROOT" "$@" "${extra[@]}") || fail "secret keys of driver $1: see the line above"
  expect_eq "Secret $secret keys (driver $1)" "$want" "$(secret_keys "$secret")"
}

# secret_value NAME KEY
secret_value() { k get secret "$1" -o go-template="{{index .data \"$2\" | base64decode}}"; }

# secret_values NAME KEY...: the values of the Secret's KEYs, one a line
# (an empty line for a key it lacks), in one read.
secret_values() {
  local name=$1 key t=""; shift
  for key in "$@"; do t+="{{with index .data \"$key\"}}{{base64decode .}}{{end}}{{\"\\n\"}}"; done
  k get secret "$name" -o go-template="$t"
}

# yaml_list ARGS...: the arguments as a YAML flow list, each a
# double-quoted string with its \ and " escaped (a JSON policy is one
# argument).
yaml_list() {
  local out="" a
  for a in "$@"; do a=${a//\\/\\\\}; out="$out\"${a//\"/\\\"}\","; done
  echo "[${out%,}]"
}

# run_pod NAME SECRET ARGS...: runs the probe image once with the Secret as
# env (envFrom), waits for it to end, prints its log; fails when it fails.
run_pod() {
  local name=$1 secret=$2; shift 2
  local args; args=$(yaml_list "$@")
  k delete pod "$name" --ignore-not-found --wait=true >/dev/null
  k apply -f - >/dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  hostNetwork: $PROBE_HOST_NETWORK
  containers:
  - name: probe
    image: $PROBE_IMAGE
    imagePullPolicy: IfNotPresent
    args: $args
    envFrom: [{secretRef: {name: $secret}}]
    env: [{name: PROBE_DEADLINE, value: "$((E2E_BULK_TIMEOUT - 10))s"}]
Y
  pod_log "$name" "probe ${*:-round trip} with Secret $secret" "$E2E_BULK_TIMEOUT"
}

# pod_log NAME WHAT [SECONDS]: waits (E2E_TIMEOUT by default) for the Pod
# to end and prints its log; fails, saying WHAT the Pod did, unless it
# succeeded.
pod_log() {
  local name=$1 what=$2 secs=${3:-$E2E_TIMEOUT} deadline phase log
  deadline=$((SECONDS + secs))
  # One watch until its container has ended (a missing Pod, or one that
  # never starts, falls through to the reads below, which say so).
  k wait --for=jsonpath='{.status.containerStatuses[0].state.terminated}' "pod/$name" --timeout="${secs}s" >/dev/null 2>&1 || true
  while :; do
    phase=$(jp "pod/$name" '{.status.phase}')
    case "$phase" in Succeeded|Failed) break ;; esac
    [ $SECONDS -lt $deadline ] || fail "pod $name: expected to finish, still $phase"
    sleep 1
  done
  log=$(k logs "$name" 2>&1 || true)
  [ "$phase" = Succeeded ] || fail "pod $name ($what) failed: $log"
  printf '%s\n' "$log"
}

# probe_job NAME SECRET ENV: starts the probe image once as a Job with the
# Secret as its environment (envFrom), plus ENV (a YAML list of env vars).
probe_job() {
  k apply -f - >/dev/null <<Y
apiVersion: batch/v1
kind: Job
metadata: {name: $1}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      hostNetwork: $PROBE_HOST_NETWORK
      containers:
      - name: probe
        image: $PROBE_IMAGE
        imagePullPolicy: IfNotPresent
        envFrom: [{secretRef: {name: $2}}]
        env: $3
Y
}

# job_log NAME: a finished Job's log. The kubelet can report the Job
# Complete (or Failed) a moment before its log is readable, when
# `kubectl logs` prints nothing: read it again, for up to ten seconds,
# while it is empty. A log still empty then is returned as it is, for the
# caller's assertion to name.
job_log() {
  local name=$1 log="" i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    log=$(k logs "job/$name" 2>&1 || true)
    [ -n "$log" ] && break
    sleep 1
  done
  printf '%s\n' "$log"
}

# probe SECRET NAME [ROLE [ENV]]: a consumer Job uses the Secret's keys as
# ROLE (ReadWrite by default: round-trips data; ReadOnly reads, WriteOnly
# writes; a Secret with a user of its own must also be refused the rest),
# with ENV (flow YAML env entries, such as PROBE_VALUE or PROBE_KEPT) added.
probe() {
  local secret=$1 name=$2 role=${3:-ReadWrite} extra=${4:-}
  local shared=true
  scoped_s3 && shared=false
  probe_job "$name" "$secret" "[{name: PROBE_ROLE, value: $role}, {name: PROBE_SHARED, value: \"$shared\"}${extra:+, $extra}]"
  if ! k wait --for=condition=Complete "job/$name" --timeout="${E2E_TIMEOUT}s" >/dev/null 2>&1; then
    fail "probe Job $name with Secret $secret did not complete: $(k logs "job/$name" 2>&1 | tail -5)"
  fi
  local log; log=$(job_log "$name")
  expect_contains "probe Job $name" "probe: OK" "$log"
  echo "$log"
}

# probe_refused SECRET NAME ROLE PATTERN [TOPIC]: a Job using the Secret as
# ROLE (on TOPIC, a topic or bucket, instead of the Secret's, when given) must fail, with
# PATTERN (an extended regex) in its log: what a workload without the right
# sees.
probe_refused() {
  local secret=$1 name=$2 role=$3 pattern=$4 topic=${5:-}
  probe_job "$name" "$secret" "[{name: PROBE_ROLE, value: $role}, {name: PROBE_TOPIC, value: \"$topic\"}, {name: PROBE_BUCKET, value: \"$topic\"}, {name: PROBE_EXPECT_REFUSED, value: \"true\"}]"
  if ! k wait --for=condition=Failed "job/$name" --timeout="${E2E_TIMEOUT}s" >/dev/null 2>&1; then
    fail "probe Job $name with Secret $secret as $role${topic:+ on $topic}: expected it refused, seen $(k get job "$name" -o jsonpath='{.status.conditions[*].type}'): $(k logs "job/$name" 2>&1 | tail -3)"
  fi
  local log; log=$(job_log "$name")
  grep -Eq "$pattern" <<<"$log" || fail "probe Job $name: expected its log to match '$pattern', seen: $log"
  echo "$log"
}

# write_admin_secret NAME KEY=VALUE...: writes the operator's Secret NAME
# with these keys, in one kubectl apply (stringData).
write_admin_secret() {
  local name=$1 kv v data=""; shift
  for kv in "$@"; do
    v=${kv#*=}; v=${v//\\/\\\\}
    data+="  \"${kv%%=*}\": \"${v//\"/\\\"}\""$'\n'
  done
  k apply -f - >/dev/null <<Y
apiVersion: v1
kind: Secret
metadata: {name: $name}
stringData:
$data
Y
}

# kafka_admin SECRET ARGS...: out-of-band broker operations (probe
# kafka-admin), as the broker's operator. Where the broker enforces ACLs
# (E2E_KAFKA_ADMIN_PASSWORD, from the implementation's settings), a
# tenant's Secret may do nothing of the sort: the operator's own Secret,
# e2e-kafka-admin, is used instead, with SECRET's bootstrap.
kafka_admin() {
  local secret=$1; shift
  if [ -n "${E2E_KAFKA_ADMIN_PASSWORD:-}" ]; then
    write_admin_secret e2e-kafka-admin bootstrap="$E2E_KAFKA_BOOTSTRAP" security.protocol=SASL_PLAINTEXT \
      sasl.mechanism=SCRAM-SHA-512 sasl.username="$E2E_KAFKA_ADMIN_USER" sasl.password="$E2E_KAFKA_ADMIN_PASSWORD"
    secret=e2e-kafka-admin
  fi
  run_pod "admin-$RANDOM" "$secret" kafka-admin "$@"
}

# s3_admin SECRET ARGS...: out-of-band S3 operations (probe s3-admin), as
# the server's operator: on buckets, and on keys through the server's admin
# API (E2E_S3_ADMIN_ENDPOINT where it has its own, as VersityGW's). Where accesses get keys of their own
# (E2E_S3_ADMIN_ACCESS_KEY, from the implementation's settings), a tenant's
# Secret may do nothing of the sort: the operator's own Secret,
# e2e-s3-admin, is used instead, with SECRET's endpoint and region.
s3_admin() {
  local secret=$1; shift
  if [ -n "${E2E_S3_ADMIN_ACCESS_KEY:-}" ]; then
    local endpoint="" region="" bucket=""
    # The tenant's endpoint, region and bucket (empty where it has none) in one read.
    { read -r endpoint; read -r region; read -r bucket; } < <(secret_values "$secret" endpoint region bucket 2>/dev/null || true)
    write_admin_secret e2e-s3-admin endpoint="$endpoint" region="$region" bucket="$bucket" \
      accessKeyID="$E2E_S3_ADMIN_ACCESS_KEY" secretAccessKey="$E2E_S3_ADMIN_SECRET_KEY" \
      implementation="$IMPLEMENTATION" adminEndpoint="${E2E_S3_ADMIN_ENDPOINT:-}"
    secret=e2e-s3-admin
  fi
  run_pod "admin-$RANDOM" "$secret" s3-admin "$@"
}

# eventually WHAT CMD...: retries CMD until it succeeds, for E2E_TIMEOUT.
eventually() {
  local what=$1 deadline=$((SECONDS + E2E_TIMEOUT)); shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "$what: not within ${E2E_TIMEOUT}s"
    sleep 2
  done
}

# installation_marker: the mark buckety's principals carry of the
# installation that issued them (drivers.InstallationMarker): 8 hex digits
# of the SHA-256 of the installation's name, here the default one, from
# namespace kube-system's UID (the e2e config sets none).
installation_marker() {
  local uid inst
  uid=$("$KUBECTL" get namespace kube-system -o jsonpath='{.metadata.uid}') || return 1
  inst="cluster-$(printf %s "$uid" | sha256sum | cut -c1-12)"
  printf %s "$inst" | sha256sum | cut -c1-8
}

# squatted_access BUCKETY SPEC PRINCIPAL-OF ADD: the foreign-principal step
# of the scoped-ownership scenarios. The access squatted (Secret squatted)
# is created before its Buckety BUCKETY, so its UID, and with it the
# principal buckety would mint, is known: PRINCIPAL-OF UID prints it. ADD
# PRINCIPAL creates that principal out of band, as the server's operator.
# Then BUCKETY is created with SPEC (flow YAML): the access reports
# PrincipalConflict naming the principal and gets no Secret, and the
# Buckety AccessesNotReady. Sets SQUATTER to the principal.
squatted_access() {
  local buckety=$1 spec=$2 principal_of=$3 add=$4 uid
  k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: BucketyAccess
metadata: {name: squatted}
spec: {bucketyRef: {name: $buckety}, credentialsSecretName: squatted}
Y
  uid=$(jp bucketyaccess/squatted '{.metadata.uid}')
  [ -n "$uid" ] || fail "the access squatted has no UID"
  SQUATTER=$("$principal_of" "$uid")
  "$add" "$SQUATTER"
  k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: $buckety}
spec: $spec
Y
  wait_cond bucketyaccess/squatted Ready False PrincipalConflict
  wait_cond "buckety/$buckety" Ready False AccessesNotReady
  expect_contains "the conflict names the principal" "$SQUATTER" "$(cond bucketyaccess/squatted Ready message)"
  grep -q PrincipalConflict <<<"$(k describe bucketyaccess squatted)" || fail "describe does not show PrincipalConflict"
  if k get secret squatted >/dev/null 2>&1; then fail "the refused access got a Secret"; fi
}

# scoped_s3: the implementation's server gives every access a key of its
# own (E2E_S3_SCOPED, from the implementation's settings).
scoped_s3() { [ "${E2E_S3_SCOPED:-false}" = true ]; }

# issued_s3: the server's IAM issues the keys (E2E_S3_ISSUED_KEYS, from the
# implementation's settings: seaweedfs, aws). The principal
# (status.principal, the BucketyCredential) is then the access's IAM user,
# and the Secret's accessKeyID the key IAM issued to it; elsewhere the key
# is the principal.
issued_s3() { [ "${E2E_S3_ISSUED_KEYS:-false}" = true ]; }

# expect_principal_of ACCESS SECRET: the access's status names the
# principal of its Secret's key: the key itself, or where IAM issues keys
# the access's own user (bky, 12 hex digits of its UID's SHA-256, -serial),
# which the server knows.
expect_principal_of() {
  local access=$1 secret=$2 principal key uid
  principal=$(jp "bucketyaccess/$access" '{.status.principal}')
  key=$(secret_value "$secret" accessKeyID)
  if ! issued_s3; then
    expect_eq "$access: the status names its key" "$key" "$principal"
    return
  fi
  uid=$(jp "bucketyaccess/$access" '{.metadata.uid}')
  [[ "$principal" =~ ^bky$(installation_marker)-$(printf %s "$uid" | sha256sum | cut -c1-12)-[0-9]+$ ]] || fail "$access: expected the status to name its IAM user bky<installation marker>-<hash of its UID>-<serial>, seen '$principal'"
  [ "$principal" != "$key" ] || fail "$access: the status names the key IAM issued ($key), not its user"
  expect_eq "$access: its user exists" true "$(s3_admin "$secret" key-exists "$principal" | tail -1)"
}

# keep_secret SECRET COPY: the tenant keeps a copy of the Secret's keys in
# Secret COPY, as a running Pod's environment would keep them.
keep_secret() {
  local f; f=$(mktemp)
  k get secret "$1" -o go-template='{{range $k, $v := .data}}{{$k}}={{$v | base64decode}}{{"\n"}}{{end}}' > "$f"
  k create secret generic "$2" --from-env-file="$f" >/dev/null
  rm -f "$f"
}

# rotate ACCESS VALUE: asks for a new credential (spec.rotation) and waits
# until the access reports it (status.rotation).
rotate() {
  k patch bucketyaccess "$1" --type=merge -p "{\"spec\":{\"rotation\":\"$2\"}}" >/dev/null
  k wait --for=jsonpath='{.status.rotation}'="$2" "bucketyaccess/$1" --timeout="${E2E_TIMEOUT}s" >/dev/null 2>&1 ||
    fail "$1: status.rotation did not follow spec.rotation $2 (seen '$(jp "bucketyaccess/$1" '{.status.rotation}')')"
  grep -q CredentialRotated <<<"$(k describe bucketyaccess "$1")" || fail "$1: no CredentialRotated event after the rotation"
}

# wait_credential_gone PRINCIPAL: waits until no BucketyCredential records
# the principal (a rotated one is revoked after the backend's grace).
wait_credential_gone() {
  local deadline=$((SECONDS + E2E_TIMEOUT))
  while grep -qx "$1" <<<"$("$KUBECTL" get bucketycredentials -o jsonpath='{.items[*].spec.principal}' | tr ' ' '\n')"; do
    [ $SECONDS -lt $deadline ] || fail "credential $1 still on record after its grace period"
    sleep 2
  done
}

# delete_secret_until_rewritten SECRET COPY KEY: the tenant deletes the
# Secret; waits until the controller has written it again with another
# KEY (a new password or secret) than the tenant's COPY holds.
delete_secret_until_rewritten() {
  local copied deadline=$((SECONDS + E2E_TIMEOUT)) now
  copied=$(secret_value "$2" "$3") || fail "the copy $2 has no $3"
  k delete secret "$1" >/dev/null
  # One read a second: a missing Secret (or key) reads as empty.
  until now=$(secret_value "$1" "$3" 2>/dev/null) && [ -n "$now" ] && [ "$now" != "$copied" ]; do
    [ $SECONDS -lt $deadline ] || fail "the deleted Secret $1 was not written again with a new $3"
    sleep 1
  done
}

# scoped_kafka: the implementation's broker gives every access a user of
# its own (E2E_KAFKA_SCOPED, from the implementation's settings).
scoped_kafka() { [ "${E2E_KAFKA_SCOPED:-false}" = true ]; }

# kafka_scoped_keys: the Secret keys a scoped kadm access adds.
kafka_scoped_keys=(group.id.prefix sasl.mechanism sasl.password sasl.username security.protocol)

# rejected WHAT EXPECTED-MESSAGE: applies stdin and expects admission to
# refuse it with that message.
rejected() {
  local what=$1 want=$2 out
  if out=$(k create -f - 2>&1); then
    fail "$what: expected a rejection containing '$want', but it was admitted"
  fi
  expect_contains "$what" "$want" "$out"
}

# refused_patch BUCKETY WHAT PARAMS WANT: a change WHAT of buckety/BUCKETY's
# spec.parameters to PARAMS (JSON, merged) is refused with WANT.
refused_patch() {
  local out
  if out=$(k patch buckety "$1" --type=merge -p "{\"spec\":{\"parameters\":$3}}" 2>&1); then
    fail "$2: expected a rejection containing '$4', but it was admitted"
  fi
  expect_contains "$2" "$4" "$out"
}

# hook NAME ARGS...: runs the scenario's optional hook NAME (a function its
# assert.sh defines) when it has one.
hook() { if declare -F "$1" >/dev/null; then "$@"; fi; }

# scale_controller N: scales buckety-controller and waits for it.
scale_controller() {
  "$KUBECTL" -n "$SYSTEM_NS" scale deploy/buckety-controller --replicas="$1" >/dev/null
  if [ "$1" = 0 ]; then
    "$KUBECTL" -n "$SYSTEM_NS" wait --for=delete pod -l app.kubernetes.io/name=buckety-controller --timeout="${E2E_TIMEOUT}s" >/dev/null 2>&1 || true
  else
    "$KUBECTL" -n "$SYSTEM_NS" rollout status deploy/buckety-controller --timeout="${E2E_TIMEOUT}s" >/dev/null
  fi
}

# expect_startup_failures WANT: WANT names an associative array of case →
# expected log text. For every case, runs the controller image with the
# ConfigMap named after the case as its config, and expects the Pod to
# crash-loop with a log naming the config file and the field's problem.
expect_startup_failures() {
  local -n _want=$1
  local image c deadline restarts log
  image=$("$KUBECTL" -n "$SYSTEM_NS" get deploy buckety-controller -o jsonpath='{.spec.template.spec.containers[0].image}')
  for c in "${!_want[@]}"; do
    k apply -f - >/dev/null <<Y
apiVersion: apps/v1
kind: Deployment
metadata: {name: $c}
spec:
  selector: {matchLabels: {case: $c}}
  template:
    metadata: {labels: {case: $c}}
    spec:
      containers:
      - name: controller
        image: $image
        imagePullPolicy: IfNotPresent
        command: [/buckety-controller]
        args: [-c=/etc/buckety, --leader-elect=false]
        volumeMounts: [{name: config, mountPath: /etc/buckety}]
      volumes: [{name: config, configMap: {name: $c}}]
Y
  done
  for c in "${!_want[@]}"; do
    step "$c"
    deadline=$((SECONDS + E2E_TIMEOUT))
    while :; do
      restarts=$(k get pods -l "case=$c" -o jsonpath='{.items[0].status.containerStatuses[0].restartCount}' 2>/dev/null)
      log=$(k logs -l "case=$c" --tail=5 2>/dev/null || true)
      [ "${restarts:-0}" -ge 1 ] && [ -n "$log" ] && break
      [ $SECONDS -lt $deadline ] || fail "$c: expected a restarting Pod with a log, seen restarts=${restarts:-none} log='$log'"
      sleep 2
    done
    expect_contains "$c: the log names the file" "/etc/buckety/buckety-controller.yaml: " "$log"
    expect_contains "$c: the log names the field and the problem" "${_want[$c]}" "$log"
  done
}

# hang_backend pauses the outage twin of this scenario's implementation
# (SIGSTOP): the second process of its server, with the same keys, that
# backends kafka-outage and s3-outage name, so the other scenarios' backend
# answers on. Its connections stay open and nothing answers, a hung server.
# It is continued by resume_backend, and always when the script exits.
# Needs an environment that runs backends as local processes with their
# twins (buckety-local up --outage-twins): E2E_BACKENDS_ENV names the pid
# file as <IMPLEMENTATION>_OUTAGE_PIDFILE.
hang_backend() {
  local var file
  var="$(echo "$IMPLEMENTATION" | tr '[:lower:]' '[:upper:]')_OUTAGE_PIDFILE"
  file=$(sed -n "s/^$var=//p" "${E2E_BACKENDS_ENV:-/dev/null}" 2>/dev/null)
  [ -n "$file" ] && [ -f "$file" ] || fail "this environment cannot hang the $IMPLEMENTATION backend's outage twin (no $var in E2E_BACKENDS_ENV)"
  HUNG_PID=$(head -1 "$file")
  trap 'kill -CONT "$HUNG_PID" 2>/dev/null || true' EXIT
  kill -STOP "$HUNG_PID"
}

# kill_controller SIGKILLs the controller's process, as a crash or an OOM
# kill would: no graceful shutdown, no Lease released (unlike kubectl
# delete pod). The kubelet restarts the container; the new process leads
# once the old Lease expires. Needs an environment whose E2E_BACKENDS_ENV
# names the node's CONTAINERD_ADDRESS, and ctr.
kill_controller() {
  local addr id
  addr=$(sed -n 's/^CONTAINERD_ADDRESS=//p' "${E2E_BACKENDS_ENV:-/dev/null}" 2>/dev/null)
  [ -n "$addr" ] || fail "this environment cannot SIGKILL the controller (no CONTAINERD_ADDRESS in E2E_BACKENDS_ENV)"
  id=$(sys get pod -l app.kubernetes.io/name=buckety-controller -o jsonpath='{.items[0].status.containerStatuses[?(@.name=="controller")].containerID}')
  id=${id#containerd://}
  [ -n "$id" ] || fail "kill_controller: no controller container is running"
  ctr --address "$addr" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null || fail "kill_controller: ctr could not kill container $id"
}

# resume_backend continues the process hang_backend paused.
resume_backend() { kill -CONT "${HUNG_PID:?hang_backend first}"; }

# sys ARGS...: kubectl in buckety's own namespace.
sys() { "$KUBECTL" -n "$SYSTEM_NS" "$@"; }

# set_controller_image REF: rolls buckety-controller to the image REF.
set_controller_image() {
  sys set image deploy/buckety-controller controller="$1" >/dev/null
  sys rollout status deploy/buckety-controller --timeout=120s >/dev/null
}

# Real clients (no one here wrote them), on the host: BUCKETY_CLIENTS is
# the bin directory `test/tools/install.sh clients` prints (make tools):
# kcat, aws, rclone, python3 with confluent-kafka and boto3, node with
# kafkajs, each pinned. The Go clients run in the probe image, in a Pod.

# with_secret SECRET CMD...: runs CMD on the host as a Pod with the Secret
# as envFrom and as a volume at $SECRET_DIR sees it: its environment holds
# exactly the Secret's keys and values (plus PATH, HOME, TMPDIR and
# SECRET_DIR), the directory a file per key. Nothing is translated.
with_secret() {
  local secret=$1; shift
  [ -n "${BUCKETY_CLIENTS:-}" ] || fail "BUCKETY_CLIENTS is not set: run make e2e, or export BUCKETY_CLIENTS=\$(test/tools/install.sh clients)"
  local dir key v rc=0 envs=()
  dir=$(mktemp -d)
  mkdir -p "$dir/secret" "$dir/home" "$dir/tmp"
  # One read of the Secret, every key with its base64 value on a line (a
  # key is never blank, a value's base64 never holds a space or a line
  # break): a kubectl process per key cost a client half a minute on a
  # loaded machine.
  while read -r key v; do
    [ -n "$key" ] || continue
    v=$(printf '%s' "$v" | base64 -d; printf x)
    v=${v%x}
    printf '%s' "$v" > "$dir/secret/$key"
    envs+=("$key=$v")
  done < <(k get secret "$secret" -o go-template='{{range $k, $v := .data}}{{$k}} {{$v}}{{"\n"}}{{end}}')
  (cd "$dir/tmp" && env -i PATH="$BUCKETY_CLIENTS:/usr/bin:/bin" HOME="$dir/home" TMPDIR="$dir/tmp" SECRET_DIR="$dir/secret" "${envs[@]}" "$@") || rc=$?
  rm -rf "$dir"
  return $rc
}

# client NAME SECRET CMD...: with_secret, its output shown indented and
# checked for "clients: OK"; fails naming the client otherwise.
client() {
  local name=$1 secret=$2 out; shift 2
  if ! out=$(with_secret "$secret" "$@" 2>&1); then
    printf '%s\n' "$out" | sed 's/^/    /' >&2
    fail "client $name with Secret $secret failed: $(printf '%s\n' "$out" | grep -m1 '^FAIL' || printf '%s\n' "$out" | tail -3)"
  fi
  printf '%s\n' "$out" | sed 's/^/    /'
  expect_contains "client $name with Secret $secret" "clients: OK" "$out"
}

# together NAME CMD...: runs CMD (a client or client_pod call) in the
# background, its output kept under NAME; settle waits for every one,
# prints their output in the order they started, and fails naming those
# that failed. A scenario's clients use objects of their own (random keys,
# Pods of their own names), so they run side by side: the client matrices
# are the longest scenarios, and mostly wait.
TOGETHER=()
together() {
  local name=$1; shift
  [ -n "${TOGETHER_DIR:-}" ] || TOGETHER_DIR=$(mktemp -d)
  ( "$@" ) > "$TOGETHER_DIR/$name" 2>&1 &
  TOGETHER+=("$!:$name")
}
settle() {
  local e failed=()
  for e in "${TOGETHER[@]}"; do
    wait "${e%%:*}" || failed+=("${e#*:}")
    cat "$TOGETHER_DIR/${e#*:}"
  done
  TOGETHER=()
  [ ${#failed[@]} -eq 0 ] || fail "clients failed (their output above): ${failed[*]}"
}

# clients_dir: the e2e's client programs (test/e2e/clients).
clients_dir() { echo "$LIB_ROOT/test/e2e/clients"; }

# client_pod NAME SECRET FROM ENV ARGS...: runs the probe image's Go
# clients once in a Pod (probe ARGS), with the Secret as envFrom (FROM env)
# or as a volume at /secret (FROM files: PROBE_SECRET_DIR), plus ENV (a
# YAML list of env vars); prints its log, fails unless it ends "probe: OK".
client_pod() {
  local name=$1 secret=$2 from=$3 env=$4; shift 4
  local args mount=""
  args=$(yaml_list "$@")
  if [ "$from" = files ]; then
    env="${env%]}, {name: PROBE_SECRET_DIR, value: /secret}]"
    env=${env/\[, /[}
    mount="volumeMounts: [{name: secret, mountPath: /secret, readOnly: true}]"
  fi
  k delete pod "$name" --ignore-not-found --wait=true >/dev/null
  k apply -f - >/dev/null <<Y
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  hostNetwork: $PROBE_HOST_NETWORK
  volumes: [{name: secret, secret: {secretName: $secret}}]
  containers:
  - name: probe
    image: $PROBE_IMAGE
    imagePullPolicy: IfNotPresent
    args: $args
    env: $env
    $( [ "$from" = env ] && echo "envFrom: [{secretRef: {name: $secret}}]" )
    $mount
Y
  # The probe bounds each of its checks (a hung server fails it, naming
  # the check); the Pod's own wait is only the backstop, as long as a bulk
  # job's: a 17 MiB multipart upload alone took 42 s under the suite's load.
  local log; log=$(pod_log "$name" "probe $* with Secret $secret as $from" "$E2E_BULK_TIMEOUT")
  printf '%s\n' "$log" | sed 's/^/    /'
  expect_contains "pod $name" "probe: OK" "$log"
}

# The shared scenarios (test/e2e/scenarios: one function each, written once
# for every driver), and what they take from the driver an assert.sh names
# when it sources this file (`. lib.sh kadm`: test/e2e/drivers/kadm.sh).
for _scenario in "$LIB_ROOT"/test/e2e/scenarios/*.sh; do
  # shellcheck source=/dev/null
  . "$_scenario"
done
unset _scenario
if [ -n "${1:-}" ]; then
  # shellcheck source=/dev/null
  . "$LIB_ROOT/test/e2e/drivers/$1.sh"
fi
