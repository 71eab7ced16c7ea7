#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
wait_cond buckety/logs Ready True
wait_cond buckety/logs Degraded True ParameterNotApplied
expect_contains "shortfall message" "lifecycle: this backend does not implement bucket lifecycle" "$(cond buckety/logs Degraded message)"
expect_eq "versioning still applied" "Enabled" "$(run_pod "admin-$RANDOM" logs-bucket s3-admin versioning "$NAMESPACE-logs" | tail -1)"
probe logs-bucket consumer
