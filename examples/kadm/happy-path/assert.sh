#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm

# happy_path_backend NAME SECRET: the topic has the spec's partitions and config.
happy_path_backend() {
  local desc
  desc=$(kafka_admin "$2" describe "$1")
  expect_contains "topic partitions" "partitions=3" "$desc"
  expect_contains "topic config" "config.retention.ms=604800000" "$desc"
}
happy_path orders orders-topic "$NAMESPACE.orders" topic kafka kadm kafka
