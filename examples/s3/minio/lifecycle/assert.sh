#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
wait_cond buckety/logs Ready True
wait_cond buckety/logs Degraded False
bucket="$NAMESPACE-logs"
run_pod suspend logs-bucket s3-admin set-versioning "$bucket" Suspended >/dev/null
deadline=$((SECONDS + 60))
until [ "$(run_pod "check-$RANDOM" logs-bucket s3-admin versioning "$bucket" | tail -1)" = Enabled ]; do
  [ $SECONDS -lt $deadline ] || fail "out-of-band suspension not reverted within 60s"
  sleep 3
done
