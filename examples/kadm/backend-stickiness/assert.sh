#!/usr/bin/env bash
# e2e: exclusive (renames the backend in the controller's config and rolls the controller)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
partitions_unchanged() { expect_contains "no backend writes" "partitions=1" "$(kafka_admin sticky-topic describe "$NAMESPACE.sticky")"; }
backend_stickiness kafka '{"partitions":"3"}' partitions_unchanged sticky-topic
