#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
scoped_s3 || fail "this scenario needs a backend that mints keys per access (E2E_S3_SCOPED=true)"
# A key the server no longer knows, or an old secret, is refused outright.
unknown='InvalidAccessKeyId|SignatureDoesNotMatch'

step "each access has a key of its own"
for a in ledger-writer ledger-reader payroll; do wait_cond "bucketyaccess/$a" Ready True; done
wait_cond bucketyaccess/ledger-reader ScopingNotImplemented False AsExpected
expect_secret_keys ledger-reader s3 bucket region
writer=$(secret_value ledger-bucket accessKeyID)
expect_principal_of ledger-writer ledger-bucket
[ "$writer" != "$(secret_value ledger-reader accessKeyID)" ] || fail "writer and reader got the same key"
[ "$writer" != "$E2E_S3_ADMIN_ACCESS_KEY" ] || fail "the writer got the server's root key"

step "the writer round-trips; the reader reads and may not write"
probe ledger-bucket writer ReadWrite
probe ledger-reader reader ReadOnly
probe_refused ledger-reader reader-writes ReadWrite 'AccessDenied'

step "no Secret reaches the neighbour's bucket, or creates one"
probe_refused ledger-bucket neighbour-write WriteOnly 'AccessDenied' "$NAMESPACE-payroll"
probe_refused ledger-reader neighbour-list ReadOnly 'AccessDenied' "$NAMESPACE-payroll"
if out=$(run_pod "create-$RANDOM" ledger-bucket s3-admin create "$NAMESPACE-mine" 2>&1); then
  fail "a tenant's key created bucket $NAMESPACE-mine: $out"
fi
expect_contains "bucket creation refused" "AccessDenied" "$out"

step "rotation on request: a new key, the old one works for the grace period, then is refused"
keep_secret ledger-reader reader-before-rotation
# The credential revoked after the grace is the principal's: the key, or
# where IAM issues keys the user holding it.
old_principal=$(jp bucketyaccess/ledger-reader '{.status.principal}')
rotate ledger-reader 2026-11-24
old=$(secret_value reader-before-rotation accessKeyID)
[ "$old" != "$(secret_value ledger-reader accessKeyID)" ] || fail "rotation: the Secret still names $old"
# The old credential first: its grace counts from the rotation, and a
# probe Job's start can take tens of seconds on a loaded node.
probe reader-before-rotation reader-old-in-grace ReadOnly
probe ledger-reader reader-rotated ReadOnly
wait_credential_gone "$old_principal"
probe_refused reader-before-rotation reader-old-revoked ReadOnly "$unknown"

step "a Secret deleted by its tenant is written again with a new secret"
keep_secret ledger-bucket writer-before-delete
delete_secret_until_rewritten ledger-bucket writer-before-delete secretAccessKey
probe ledger-bucket writer-new-secret ReadWrite
probe_refused writer-before-delete writer-old-secret ReadWrite "$unknown"

step "a deleted access's key is revoked before the access is gone"
keep_secret ledger-reader reader-before-delete
k delete bucketyaccess ledger-reader --wait=true >/dev/null
probe_refused reader-before-delete reader-deleted ReadOnly "$unknown"
