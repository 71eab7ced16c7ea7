#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
topic="$NAMESPACE.audit"

drift_change() {
  kafka_admin audit-topic set-config "$topic" retention.ms=1000 >/dev/null
  kafka_admin audit-topic set-config "$topic" cleanup.policy=compact >/dev/null
}

# drift_reverted: the spec's retention is back, cleanup.policy gone.
drift_reverted() {
  DRIFT_SEEN=$(kafka_admin audit-topic describe "$topic")
  case "$DRIFT_SEEN" in *"retention.ms=604800000"*) case "$DRIFT_SEEN" in *cleanup.policy*) ;; *) return 0 ;; esac ;; esac
  return 1
}

drift_after() {
  step "grow partitions on the broker: ParameterDrift"
  kafka_admin audit-topic grow "$topic" 5 >/dev/null
  wait_cond buckety/audit ParameterDrift True DriftUnrepairable
  expect_contains "drift message" "service has 5, spec wants 2" "$(cond buckety/audit ParameterDrift message)"
  step "raising the spec resolves it"
  k patch buckety audit --type=merge -p '{"spec":{"parameters":{"partitions":"5"}}}' >/dev/null
  wait_cond buckety/audit ParameterDrift False
  wait_cond buckety/audit Ready True
}
out_of_band_drift audit
