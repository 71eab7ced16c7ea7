#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
scoped_s3 || fail "this scenario needs a backend that mints keys per access (E2E_S3_SCOPED=true)"
# A key the server no longer knows, or an old secret, is refused outright.
unknown='InvalidAccessKeyId|SignatureDoesNotMatch'
keep() { # keep SECRET COPY: the tenant keeps a copy of the Secret's keys, as a running Pod's env would
  k get secret "$1" -o go-template='{{range $k, $v := .data}}{{$k}}={{$v | base64decode}}{{"\n"}}{{end}}' > "$TMP/$2.env"
  k create secret generic "$2" --from-env-file="$TMP/$2.env" >/dev/null
}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

step "each access has a key of its own"
for a in ledger-writer ledger-reader payroll; do wait_cond "bucketyaccess/$a" Ready True; done
wait_cond bucketyaccess/ledger-reader ScopingNotImplemented False AsExpected
expect_secret_keys ledger-reader s3 region
writer=$(secret_value ledger-bucket accessKeyID)
expect_eq "the status names the key" "$writer" "$(jp bucketyaccess/ledger-writer '{.status.principal}')"
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
keep ledger-reader reader-before-rotation
k patch bucketyaccess ledger-reader --type=merge -p '{"spec":{"rotation":"2026-11-24"}}' >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
until [ "$(jp bucketyaccess/ledger-reader '{.status.rotation}')" = 2026-11-24 ]; do
  [ $SECONDS -lt $deadline ] || fail "status.rotation did not follow spec.rotation"
  sleep 1
done
old=$(secret_value reader-before-rotation accessKeyID)
[ "$old" != "$(secret_value ledger-reader accessKeyID)" ] || fail "rotation: the Secret still names $old"
k describe bucketyaccess ledger-reader | grep -q CredentialRotated || fail "rotation: no CredentialRotated event on the access"
probe ledger-reader reader-rotated ReadOnly
probe reader-before-rotation reader-old-in-grace ReadOnly
deadline=$((SECONDS + E2E_TIMEOUT))
while "$KUBECTL" get bucketycredentials -o jsonpath='{.items[*].spec.principal}' | tr ' ' '\n' | grep -qx "$old"; do
  [ $SECONDS -lt $deadline ] || fail "key $old still on record after its grace period"
  sleep 2
done
probe_refused reader-before-rotation reader-old-revoked ReadOnly "$unknown"

step "a Secret deleted by its tenant is written again with a new secret"
keep ledger-bucket writer-before-delete
k delete secret ledger-bucket >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
until k get secret ledger-bucket >/dev/null 2>&1 && [ "$(secret_value ledger-bucket secretAccessKey)" != "$(secret_value writer-before-delete secretAccessKey)" ]; do
  [ $SECONDS -lt $deadline ] || fail "the deleted Secret was not written again with a new secret"
  sleep 1
done
probe ledger-bucket writer-new-secret ReadWrite
probe_refused writer-before-delete writer-old-secret ReadWrite "$unknown"

step "a deleted access's key is revoked before the access is gone"
keep ledger-reader reader-before-delete
k delete bucketyaccess ledger-reader --wait=true >/dev/null
probe_refused reader-before-delete reader-deleted ReadOnly "$unknown"
