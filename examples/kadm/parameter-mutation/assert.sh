#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
topic="$NAMESPACE.metrics"
wait_cond buckety/metrics Ready True
desc=$(kafka_admin metrics-topic describe "$topic")
expect_contains "initial partitions" "partitions=2" "$desc"
expect_contains "initial retention" "config.retention.ms=86400000" "$desc"
step "grow partitions, change retention, drop cleanup.policy"
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
step "immutable changes are rejected at admission"
out=$(k patch buckety metrics --type=merge -p '{"spec":{"parameters":{"replicationFactor":"3"}}}' 2>&1) && fail "replicationFactor change was admitted"
expect_contains "replicationFactor rejection" "is immutable after creation (was 1, now 3)" "$out"
out=$(k patch buckety metrics --type=merge -p '{"spec":{"parameters":{"partitions":"1"}}}' 2>&1) && fail "partition shrink was admitted"
expect_contains "partitions rejection" "can only grow (was 4, now 1)" "$out"
