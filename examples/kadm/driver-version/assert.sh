#!/usr/bin/env bash
# e2e: exclusive (rolls the controller to other images)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
partitions_unchanged() { expect_contains "no backend writes" "partitions=1" "$(kafka_admin versioned-topic describe "$NAMESPACE.versioned")"; }
driver_version kadm '{"partitions":"3"}' partitions_unchanged
