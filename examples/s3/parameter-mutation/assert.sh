#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
bucket="$NAMESPACE-data"

mutation_initial() { expect_eq "versioning" "Enabled" "$(s3_admin data-bucket versioning "$bucket" | tail -1)"; }

# mutation_change: versioning off is admitted with a warning and suspends it.
mutation_change() {
  local out deadline
  out=$(k patch buckety data --type=merge -p '{"spec":{"parameters":{"versioning":"false"}}}' 2>&1) || fail "versioning change rejected: $out"
  expect_contains "warning" "S3 cannot turn versioning off; it is suspended" "$out"
  deadline=$((SECONDS + E2E_TIMEOUT))
  until [ "$(s3_admin data-bucket versioning "$bucket" | tail -1)" = Suspended ]; do
    [ $SECONDS -lt $deadline ] || fail "versioning not suspended"
    sleep 2
  done
}
parameter_mutation data "a region change" '{"region":"eu-north-1"}' "is immutable after creation (was unset, now eu-north-1)"
