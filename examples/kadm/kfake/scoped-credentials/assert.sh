#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
scoped_kafka || fail "this scenario needs a broker that enforces SASL and ACLs (E2E_KAFKA_SCOPED=true)"
refused='AUTHORIZATION_FAILED'
# A user the broker no longer knows cannot log in: kfake closes the
# connection, Kafka answers SASL_AUTHENTICATION_FAILED.
unknown='SASL_AUTHENTICATION_FAILED|closed the connection|EOF'
# (the login is tried by a write: a refused login surfaces at once)

step "each access has a user of its own"
for a in ledger-writer ledger-reader payroll; do wait_cond "bucketyaccess/$a" Ready True; done
wait_cond bucketyaccess/ledger-reader ScopingNotImplemented False AsExpected
expect_secret_keys ledger-reader kadm topic
writer=$(secret_value ledger-topic sasl.username)
expect_contains "the user names its installation, namespace and access" "bky-$(installation_marker).$NAMESPACE.ledger-writer." "$writer"
expect_eq "the status names the user" "$writer" "$(jp bucketyaccess/ledger-writer '{.status.principal}')"

step "the writer round-trips; the reader reads and may not write"
probe ledger-topic writer ReadWrite
probe ledger-reader reader ReadOnly
probe_refused ledger-reader reader-writes ReadWrite "$refused"

step "a consumer group outside the Secret's group.id.prefix is refused"
# The prefix is the user's name without its installation's marker and
# serial (bky.<namespace>.<access>.<hash>_), as before installation names.
expect_contains "the reader's prefix names its access" "$(secret_value ledger-reader sasl.username | sed 's/\.[0-9]*$//; s/^bky-[0-9a-f]*\./bky./')_" "$(secret_value ledger-reader group.id.prefix)"
probe_job reader-other-group ledger-reader "[{name: PROBE_ROLE, value: ReadOnly}, {name: PROBE_GROUP, value: payroll-consumers}, {name: PROBE_EXPECT_REFUSED, value: \"true\"}]"
k wait --for=condition=Failed job/reader-other-group --timeout="${E2E_TIMEOUT}s" >/dev/null || fail "a consumer in group payroll-consumers was not refused"
expect_contains "the refused consumer's log" GROUP_AUTHORIZATION_FAILED "$(k logs job/reader-other-group 2>&1)"

step "no Secret reaches the neighbour's topic"
probe_refused ledger-topic neighbour-write WriteOnly "$refused" "$NAMESPACE.payroll"
probe_refused ledger-reader neighbour-read ReadOnly "$refused" "$NAMESPACE.payroll"

step "rotation on request: a new user, the old one works for the grace period, then is refused"
keep_secret ledger-reader reader-before-rotation
rotate ledger-reader 2026-11-24
old=$(secret_value reader-before-rotation sasl.username)
new=$(secret_value ledger-reader sasl.username)
[ "$old" != "$new" ] || fail "rotation: the Secret still names $old"
# The old credential first: its grace counts from the rotation, and a
# probe Job's start can take tens of seconds on a loaded node.
probe reader-before-rotation reader-old-in-grace ReadOnly
probe ledger-reader reader-rotated ReadOnly
"$KUBECTL" get bucketycredentials -l "buckety.yolean.se/owner-uid=$(jp bucketyaccess/ledger-reader '{.metadata.uid}')"
wait_credential_gone "$old"
probe_refused reader-before-rotation reader-old-revoked WriteOnly "$unknown"

step "a Secret deleted by its tenant is written again with a new password"
keep_secret ledger-topic writer-before-delete
delete_secret_until_rewritten ledger-topic writer-before-delete sasl.password
probe ledger-topic writer-new-password ReadWrite
probe_refused writer-before-delete writer-old-password ReadWrite "$unknown"

step "a deleted access's user is revoked before the access is gone"
keep_secret ledger-reader reader-before-delete
k delete bucketyaccess ledger-reader --wait=true >/dev/null
probe_refused reader-before-delete reader-deleted WriteOnly "$unknown"
