#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
scoped_kafka || fail "this scenario needs a broker that enforces SASL and ACLs (E2E_KAFKA_SCOPED=true)"
refused='AUTHORIZATION_FAILED'
# A user the broker no longer knows cannot log in: kfake closes the
# connection, Kafka answers SASL_AUTHENTICATION_FAILED.
unknown='SASL_AUTHENTICATION_FAILED|closed the connection|EOF'
# (the login is tried by a write: a refused login surfaces at once)
keep() { # keep SECRET COPY: the tenant keeps a copy of the Secret's keys, as a running Pod's env would
  k get secret "$1" -o go-template='{{range $k, $v := .data}}{{$k}}={{$v | base64decode}}{{"\n"}}{{end}}' > "$TMP/$2.env"
  k create secret generic "$2" --from-env-file="$TMP/$2.env" >/dev/null
}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

step "each access has a user of its own"
for a in ledger-writer ledger-reader payroll; do wait_cond "bucketyaccess/$a" Ready True; done
wait_cond bucketyaccess/ledger-reader ScopingNotImplemented False AsExpected
expect_secret_keys ledger-reader kadm
writer=$(secret_value ledger-topic sasl.username)
expect_contains "the user names its namespace and access" "bky.$NAMESPACE.ledger-writer." "$writer"
expect_eq "the status names the user" "$writer" "$(jp bucketyaccess/ledger-writer '{.status.principal}')"

step "the writer round-trips; the reader reads and may not write"
probe ledger-topic writer ReadWrite
probe ledger-reader reader ReadOnly
probe_refused ledger-reader reader-writes ReadWrite "$refused"

step "a consumer group outside the Secret's group.id.prefix is refused"
expect_contains "the reader's prefix names its user" "$(secret_value ledger-reader sasl.username | sed 's/\.[0-9]*$//')." "$(secret_value ledger-reader group.id.prefix)"
probe_job reader-other-group ledger-reader "[{name: PROBE_ROLE, value: ReadOnly}, {name: PROBE_GROUP, value: payroll-consumers}, {name: PROBE_EXPECT_REFUSED, value: \"true\"}]"
k wait --for=condition=Failed job/reader-other-group --timeout="${E2E_TIMEOUT}s" >/dev/null || fail "a consumer in group payroll-consumers was not refused"
expect_contains "the refused consumer's log" GROUP_AUTHORIZATION_FAILED "$(k logs job/reader-other-group 2>&1)"

step "no Secret reaches the neighbour's topic"
probe_refused ledger-topic neighbour-write WriteOnly "$refused" "$NAMESPACE.payroll"
probe_refused ledger-reader neighbour-read ReadOnly "$refused" "$NAMESPACE.payroll"

step "rotation on request: a new user, the old one works for the grace period, then is refused"
keep ledger-reader reader-before-rotation
k patch bucketyaccess ledger-reader --type=merge -p '{"spec":{"rotation":"2026-11-24"}}' >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
until [ "$(jp bucketyaccess/ledger-reader '{.status.rotation}')" = 2026-11-24 ]; do
  [ $SECONDS -lt $deadline ] || fail "status.rotation did not follow spec.rotation"
  sleep 1
done
old=$(secret_value reader-before-rotation sasl.username)
new=$(secret_value ledger-reader sasl.username)
[ "$old" != "$new" ] || fail "rotation: the Secret still names $old"
k describe bucketyaccess ledger-reader | grep -q CredentialRotated || fail "rotation: no CredentialRotated event on the access"
probe ledger-reader reader-rotated ReadOnly
probe reader-before-rotation reader-old-in-grace ReadOnly
"$KUBECTL" get bucketycredentials -l "buckety.yolean.se/owner-uid=$(jp bucketyaccess/ledger-reader '{.metadata.uid}')"
wait_until_gone_credential() {
  local principal=$1 deadline=$((SECONDS + E2E_TIMEOUT))
  while "$KUBECTL" get bucketycredentials -o jsonpath='{.items[*].spec.principal}' | tr ' ' '\n' | grep -qx "$principal"; do
    [ $SECONDS -lt $deadline ] || fail "credential $principal still on record after its grace period"
    sleep 2
  done
}
wait_until_gone_credential "$old"
probe_refused reader-before-rotation reader-old-revoked WriteOnly "$unknown"

step "a Secret deleted by its tenant is written again with a new password"
keep ledger-topic writer-before-delete
k delete secret ledger-topic >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
until k get secret ledger-topic >/dev/null 2>&1 && [ "$(secret_value ledger-topic sasl.password)" != "$(secret_value writer-before-delete sasl.password)" ]; do
  [ $SECONDS -lt $deadline ] || fail "the deleted Secret was not written again with a new password"
  sleep 1
done
probe ledger-topic writer-new-password ReadWrite
probe_refused writer-before-delete writer-old-password ReadWrite "$unknown"

step "a deleted access's user is revoked before the access is gone"
keep ledger-reader reader-before-delete
k delete bucketyaccess ledger-reader --wait=true >/dev/null
probe_refused reader-before-delete reader-deleted WriteOnly "$unknown"
