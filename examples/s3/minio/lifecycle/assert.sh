#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
wait_cond buckety/logs Ready True
wait_cond buckety/logs Degraded False
bucket="$NAMESPACE-logs"
s3_admin logs-bucket set-versioning "$bucket" Suspended >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
until [ "$(s3_admin logs-bucket versioning "$bucket" | tail -1)" = Enabled ]; do
  [ $SECONDS -lt $deadline ] || fail "out-of-band suspension not reverted after ${E2E_TIMEOUT}s"
  sleep 3
done
