#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
bucket="$NAMESPACE-data"
wait_cond buckety/data Ready True
expect_eq "versioning" "Enabled" "$(s3_admin data-bucket versioning "$bucket" | tail -1)"
out=$(k patch buckety data --type=merge -p '{"spec":{"parameters":{"versioning":"false"}}}' 2>&1) || fail "versioning change rejected: $out"
expect_contains "warning" "S3 cannot turn versioning off; it is suspended" "$out"
deadline=$((SECONDS + E2E_TIMEOUT))
until [ "$(s3_admin data-bucket versioning "$bucket" | tail -1)" = Suspended ]; do
  [ $SECONDS -lt $deadline ] || fail "versioning not suspended"
  sleep 2
done
out=$(k patch buckety data --type=merge -p '{"spec":{"parameters":{"region":"eu-north-1"}}}' 2>&1) && fail "a region change was admitted"
expect_contains "region rejection" "is immutable after creation (was unset, now eu-north-1)" "$out"
