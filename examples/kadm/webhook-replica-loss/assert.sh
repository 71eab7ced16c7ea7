#!/usr/bin/env bash
# e2e: exclusive (deletes webhook replicas)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
sys() { "$KUBECTL" -n "$SYSTEM_NS" "$@"; }
wait_cond buckety/steady Ready True

# Two replicas: on the host network a one-replica copy on other ports (see
# README.md), elsewhere the Deployment's own (the release runs two).
deployments=(buckety-webhook)
if [ "$(sys get deploy buckety-webhook -o jsonpath='{.spec.template.spec.hostNetwork}')" = true ]; then
  step "a second webhook replica on the shared admission port"
  trap 'sys delete deploy buckety-webhook-b --ignore-not-found --wait=false >/dev/null 2>&1 || true' EXIT
  sys get deploy buckety-webhook -o json | (cd "${ROOT:-$(dirname "$0")/../../..}" && go run ./test/e2e/e2etool second-replica b) | sys apply -f - >/dev/null
  deployments+=(buckety-webhook-b)
elif [ "$(sys get deploy buckety-webhook -o jsonpath='{.spec.replicas}')" -lt 2 ]; then
  fail "want the webhook Deployment at two or more replicas, seen $(sys get deploy buckety-webhook -o jsonpath='{.spec.replicas}')"
fi
ready_replicas() {
  local d
  for d in "${deployments[@]}"; do sys rollout status "deploy/$d" --timeout="${E2E_TIMEOUT}s" >/dev/null || fail "webhook Deployment $d not available"; done
  n=$(sys get pods -l app.kubernetes.io/name=buckety-webhook --field-selector=status.phase=Running -o go-template='{{range .items}}{{if not .metadata.deletionTimestamp}}{{range .status.conditions}}{{if and (eq .type "Ready") (eq .status "True")}}x{{end}}{{end}}{{end}}{{end}}')
  [ ${#n} -ge 2 ] || fail "want two ready webhook replicas, seen ${#n}"
}
ready_replicas

step "a steady stream of applies while replicas are stopped one after the other"
stream=$(mktemp -d)
# writer N: applies until told to stop; two of them keep the API server's
# connection to the webhook busy.
writer() {
  local i=0 name out
  while [ ! -e "$stream/stop" ]; do
    i=$((i + 1))
    # Every fifth apply creates a Buckety, the others update steady-N.
    if [ $((i % 5)) = 0 ]; then name=s$1-$i; else name=steady-$1; fi
    if out=$(k apply -f - 2>&1 <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: $name, labels: {round: "r$i"}}
spec: {backend: kafka}
Y
); then echo ok >>"$stream/sent"; else echo "apply $1/$i: $out" >>"$stream/failed"; fi
  done
}
writer 1 & w1=$!
writer 2 & w2=$!
trap 'touch "$stream/stop"; wait $w1 $w2 2>/dev/null || true; rm -rf "$stream"; sys delete deploy buckety-webhook-b --ignore-not-found --wait=false >/dev/null 2>&1 || true' EXIT
# pod_of SELECTOR: a webhook Pod that is not terminating.
pod_of() { sys get pods -l "$1" -o go-template='{{range .items}}{{if not .metadata.deletionTimestamp}}{{.metadata.name}}{{"\n"}}{{end}}{{end}}' | head -1; }
a=app.kubernetes.io/name=buckety-webhook,!buckety.yolean.se/e2e-replica b=$a
[ ${#deployments[@]} = 2 ] && b=buckety.yolean.se/e2e-replica=b
sleep 3
for round in "$a graceful" "$b graceful" "$a forced"; do
  set -- $round
  pod=$(pod_of "$1")
  [ -n "$pod" ] || fail "no webhook Pod for $1"
  step "delete webhook Pod $pod ($2)"
  if [ "$2" = forced ]; then
    sys delete pod "$pod" --grace-period=0 --force >/dev/null 2>&1
  else
    sys delete pod "$pod" >/dev/null
  fi
  sleep 2
  ready_replicas
  sleep 2
done
touch "$stream/stop"
wait $w1 $w2
count() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
sent=$(count "$stream/sent")
failed=$(count "$stream/failed")
echo "figure: failed admissions $failed of $((sent + failed)) applies across 3 replica stops"
[ "$failed" = 0 ] || fail "failed admissions: $(head -3 "$stream/failed")"
[ "$sent" -ge 10 ] || fail "want a steady stream (10 applies or more), seen $sent"
expect_contains "the stream's updates reached steady-1" "r" "$(jp buckety/steady-1 '{.metadata.labels.round}')"
