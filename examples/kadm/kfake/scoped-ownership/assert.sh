#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
scoped_kafka || fail "this scenario needs a broker that enforces SASL and ACLs (E2E_KAFKA_SCOPED=true)"
topic="$NAMESPACE.orders"
# acls_of USER: the user's ACLs on the broker, one "TYPE NAME PATTERN OPERATION PERMISSION" per line
acls_of() { kafka_admin orders-writer acls "$1"; }
# mine: the buckety users of this namespace on the broker
mine() { local all; all=$(kafka_admin orders-writer users) || exit 1; echo "$all" | grep -E "^bky(-[0-9a-f]{8})?\.$NAMESPACE\." || true; }

step "the operator changes the reader's ACLs; the drift sweep puts them back"
wait_cond bucketyaccess/orders-writer Ready True
wait_cond bucketyaccess/orders-reader Ready True
probe orders-writer writer ReadWrite
reader=$(jp bucketyaccess/orders-reader '{.status.principal}')
acls_of "$reader"
kafka_admin orders-writer acl-delete "$reader" "$topic" Read
kafka_admin orders-writer acl-add "$reader" "$topic" Write
read_restored_write_gone() {
  local acls; acls=$(acls_of "$reader")
  [[ "$acls" == *"TOPIC $topic LITERAL READ ALLOW"* && "$acls" != *"TOPIC $topic LITERAL WRITE ALLOW"* ]]
}
eventually "the reader's Read restored and the operator's Write removed" read_restored_write_gone
acls_of "$reader"
probe orders-reader reader-after-drift ReadOnly

step "a user someone else created with buckety's name for an access is never touched"
marker=$(installation_marker) || fail "cannot read namespace kube-system's UID"
user_of() { echo "bky-$marker.$NAMESPACE.squatted.$(printf %s "$1" | sha256sum | cut -c1-12).1"; }
add_user() { kafka_admin orders-writer user-add "$1" their-own-password; }
squatted_access vault "{backend: kafka, name: \"$NAMESPACE.vault\"}" user_of add_user
squatter=$SQUATTER
k create secret generic squatter --from-literal=bootstrap="$E2E_KAFKA_BOOTSTRAP" --from-literal=topic="$NAMESPACE.vault" \
  --from-literal=security.protocol=SASL_PLAINTEXT --from-literal=sasl.mechanism=SCRAM-SHA-512 \
  --from-literal=sasl.username="$squatter" --from-literal=sasl.password=their-own-password >/dev/null
# Logged in with its own password (authorization, not authentication, is refused: it has no ACLs).
probe_refused squatter squatter-still-logs-in WriteOnly 'TOPIC_AUTHORIZATION_FAILED'
k delete bucketyaccess squatted --wait=true >/dev/null
grep -qx "$squatter" <<<"$(mine)" || fail "the foreign user $squatter was deleted with the access"
wait_cond buckety/vault Ready True
