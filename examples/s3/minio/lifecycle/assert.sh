#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
wait_cond buckety/logs Ready True
wait_cond buckety/logs Degraded False
bucket="$NAMESPACE-logs"
s3_admin logs-bucket set-versioning "$bucket" Suspended >/dev/null
deadline=$((SECONDS + 60))
until [ "$(s3_admin logs-bucket versioning "$bucket" | tail -1)" = Enabled ]; do
  [ $SECONDS -lt $deadline ] || fail "out-of-band suspension not reverted within 60s"
  sleep 3
done
