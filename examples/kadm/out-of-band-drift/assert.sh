#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
topic="$NAMESPACE.audit"
wait_cond buckety/audit Ready True
step "change configs on the broker"
kafka_admin audit-topic set-config "$topic" retention.ms=1000 >/dev/null
kafka_admin audit-topic set-config "$topic" cleanup.policy=compact >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
while :; do
  desc=$(kafka_admin audit-topic describe "$topic")
  case "$desc" in *"retention.ms=604800000"*) case "$desc" in *cleanup.policy*) ;; *) break ;; esac ;; esac
  [ $SECONDS -lt $deadline ] || fail "out-of-band configs not reverted after ${E2E_TIMEOUT}s: $desc"
  sleep 2
done
k get events --field-selector reason=DriftRepaired -o name | grep -q . || fail "expected a DriftRepaired event"
step "grow partitions on the broker: ParameterDrift"
kafka_admin audit-topic grow "$topic" 5 >/dev/null
wait_cond buckety/audit ParameterDrift True DriftUnrepairable
expect_contains "drift message" "service has 5, spec wants 2" "$(cond buckety/audit ParameterDrift message)"
step "raising the spec resolves it"
k patch buckety audit --type=merge -p '{"spec":{"parameters":{"partitions":"5"}}}' >/dev/null
wait_cond buckety/audit ParameterDrift False
wait_cond buckety/audit Ready True
