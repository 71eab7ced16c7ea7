#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
bucket="$NAMESPACE-ledger"
wait_cond buckety/ledger Ready True
run_pod suspend ledger-bucket s3-admin set-versioning "$bucket" Suspended >/dev/null
deadline=$((SECONDS + 60))
until [ "$(run_pod "v-$RANDOM" ledger-bucket s3-admin versioning "$bucket" | tail -1)" = Enabled ]; do
  [ $SECONDS -lt $deadline ] || fail "out-of-band suspension not reverted within 60s"
  sleep 3
done
k get events --field-selector reason=DriftRepaired -o name | grep -q . || fail "expected a DriftRepaired event"
