#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
topic="$NAMESPACE.metrics"

mutation_initial() {
  local desc
  desc=$(kafka_admin metrics-topic describe "$topic")
  expect_contains "initial partitions" "partitions=2" "$desc"
  expect_contains "initial retention" "config.retention.ms=86400000" "$desc"
}

# mutation_change: grow partitions, change retention, drop cleanup.policy.
mutation_change() {
  local gen deadline desc
  k patch buckety metrics --type=json -p '[{"op":"replace","path":"/spec/parameters/partitions","value":"4"},{"op":"replace","path":"/spec/parameters/config.retention.ms","value":"3600000"},{"op":"remove","path":"/spec/parameters/config.cleanup.policy"}]' >/dev/null
  gen=$(jp buckety/metrics '{.metadata.generation}')
  deadline=$((SECONDS + E2E_TIMEOUT))
  until [ "$(jp buckety/metrics '{.status.observedGeneration}')" = "$gen" ]; do
    [ $SECONDS -lt $deadline ] || fail "observedGeneration did not reach $gen"
    sleep 1
  done
  desc=$(kafka_admin metrics-topic describe "$topic")
  expect_contains "grown partitions" "partitions=4" "$desc"
  expect_contains "new retention" "config.retention.ms=3600000" "$desc"
  case "$desc" in *cleanup.policy*) fail "cleanup.policy should be removed from the topic, seen: $desc" ;; esac
}
parameter_mutation metrics \
  "replicationFactor change" '{"replicationFactor":"3"}' "is immutable after creation (was 1, now 3)" \
  "partition shrink" '{"partitions":"1"}' "can only grow (was 4, now 1)"
