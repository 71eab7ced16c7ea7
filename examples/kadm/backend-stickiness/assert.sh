#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
ctl() { "$KUBECTL" -n "$SYSTEM_NS" "$@"; }
wait_cond buckety/sticky Ready True
cm=$(ctl get deploy buckety-controller -o jsonpath='{.spec.template.spec.volumes[?(@.name=="config")].configMap.name}')
[ -n "$cm" ] || fail "cannot find the controller's config ConfigMap"
renamed=
restore() {
  ctl patch deploy buckety-controller --type=json -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/volumes/0/configMap/name\",\"value\":\"$cm\"}]" >/dev/null
  ctl rollout status deploy/buckety-controller --timeout=120s >/dev/null
  ctl delete configmap buckety-e2e-renamed --ignore-not-found >/dev/null
  rm -f "$renamed"
}
trap restore EXIT
step "rename the backend in the config and roll the controller"
renamed=$(mktemp)
ctl get configmap "$cm" -o go-template='{{index .data "buckety-controller.yaml"}}' | sed 's/^- name: kafka$/- name: kafka-renamed/' > "$renamed"
grep -q 'name: kafka-renamed' "$renamed" || fail "could not rename the backend in: $(cat "$renamed")"
ctl create configmap buckety-e2e-renamed --from-file=buckety-controller.yaml="$renamed" >/dev/null
ctl patch deploy buckety-controller --type=json -p '[{"op":"replace","path":"/spec/template/spec/volumes/0/configMap/name","value":"buckety-e2e-renamed"}]' >/dev/null
ctl rollout status deploy/buckety-controller --timeout=120s >/dev/null
wait_cond buckety/sticky BackendUnavailable True BackendNotConfigured
expect_eq "status.backend stays" "kafka" "$(jp buckety/sticky '{.status.backend}')"
expect_contains "message names the backend" 'backend "kafka" is not in the controller config' "$(cond buckety/sticky BackendUnavailable message)"
step "paused: a parameter change is not applied; the Secret still works"
k patch buckety sticky --type=merge -p '{"spec":{"parameters":{"partitions":"3"}}}' >/dev/null
sleep 12
expect_contains "no backend writes" "partitions=1" "$(kafka_admin sticky-topic describe "$NAMESPACE.sticky")"
probe sticky-topic while-unavailable
