#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
bucket="$NAMESPACE-ledger"
wait_cond buckety/ledger Ready True
s3_admin ledger-bucket set-versioning "$bucket" Suspended >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
until [ "$(s3_admin ledger-bucket versioning "$bucket" | tail -1)" = Enabled ]; do
  [ $SECONDS -lt $deadline ] || fail "out-of-band suspension not reverted after ${E2E_TIMEOUT}s"
  sleep 3
done
k get events --field-selector reason=DriftRepaired -o name | grep -q . || fail "expected a DriftRepaired event"
