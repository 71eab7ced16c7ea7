#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
image=$("$KUBECTL" -n "$SYSTEM_NS" get deploy buckety-controller -o jsonpath='{.spec.template.spec.containers[0].image}')
declare -A want=(
  [strict-decode]='backends[0].drvier: unknown field "drvier"'
  [undefined-variable]='backends[0].config.accessKeyID: Invalid value: environment variable E2E_UNSET_ACCESS_KEY is not set'
  [unknown-driver]='backends[0].driver: Invalid value: "mysql": unknown driver; this build has: kadm, s3'
  [duplicate-backends]='backends[0].config.implementation: Unsupported value: "ceph": supported values: "aws", "r2", "minio", "versitygw"'
  [missing-field]='backends[0].config.endpoint: Required value'
)
for c in "${!want[@]}"; do
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
for c in "${!want[@]}"; do
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
  expect_contains "$c: the log names the field and the problem" "${want[$c]}" "$log"
done
