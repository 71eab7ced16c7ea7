#!/usr/bin/env bash
# e2e: exclusive (SIGKILLs the controller)
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
scoped_kafka || fail "this scenario needs a broker that enforces SASL and ACLs (E2E_KAFKA_SCOPED=true)"
# acls_of USER: the user's ACLs on the broker, one "TYPE NAME PATTERN OPERATION PERMISSION" per line
acls_of() { kafka_admin orders-writer acls "$1"; }
# mine: the buckety users of this namespace on the broker
mine() { local all; all=$(kafka_admin orders-writer users) || exit 1; echo "$all" | grep -E "^bky(-[0-9a-f]{8})?\.$NAMESPACE\." || true; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
wait_cond bucketyaccess/orders-writer Ready True
wait_cond bucketyaccess/orders-reader Ready True
# A record for the crowd's readers to read.
probe orders-writer writer ReadWrite

step "30 accesses, the controller SIGKILLed while it grants them: every access gets its own user, none is left over"
for i in $(seq 1 30); do
  printf -- '---\napiVersion: buckety.yolean.se/v1alpha1\nkind: BucketyAccess\nmetadata: {name: crowd-%s}\nspec: {bucketyRef: {name: orders}, credentialsSecretName: crowd-%s, role: ReadOnly}\n' "$i" "$i"
done > "$TMP/crowd.yaml"
recorded() { "$KUBECTL" get bucketycredentials -o jsonpath='{range .items[*]}{.spec.owner.namespace}/{.spec.owner.name}{"\n"}{end}' | grep -c "^$NAMESPACE/crowd-" || true; }
k apply -f "$TMP/crowd.yaml" >/dev/null
some_recorded() { [ "$(recorded)" -gt 0 ]; }
eventually "a crowd credential recorded" some_recorded
kill_controller
echo "controller killed with $(recorded) of 30 credentials recorded, $(k get secrets -o name | grep -c '/crowd-' || true) Secrets written"
for i in $(seq 1 30); do wait_cond "bucketyaccess/crowd-$i" Ready True; done
principals=$(for i in $(seq 1 30); do jp "bucketyaccess/crowd-$i" '{.status.principal}'; echo; done | sort)
for i in $(seq 1 30); do
  expect_eq "crowd-$i's Secret names its user" "$(jp "bucketyaccess/crowd-$i" '{.status.principal}')" "$(secret_value "crowd-$i" sasl.username)"
done
expect_eq "distinct users" 30 "$(echo "$principals" | sort -u | wc -l)"
on_broker=$(mine | sort)
expect_eq "the namespace's users on the broker are exactly the accesses'" "$(printf '%s\n%s\n%s' "$principals" "$(jp bucketyaccess/orders-writer '{.status.principal}')" "$(jp bucketyaccess/orders-reader '{.status.principal}')" | sort)" "$on_broker"
probe crowd-17 crowd-reader ReadOnly
crowd17=$(jp bucketyaccess/crowd-17 '{.status.principal}')

step "the controller SIGKILLed while the 30 are deleted: every user is revoked"
k delete bucketyaccess $(seq -f 'crowd-%g' 1 30) --wait=false >/dev/null
some_revoked() { [ "$(recorded)" -lt 30 ]; }
eventually "a crowd access revoked" some_revoked
kill_controller
for i in $(seq 1 30); do wait_gone "bucketyaccess/crowd-$i"; done
expect_eq "the crowd's users on the broker" "" "$(mine | grep -E "^bky(-[0-9a-f]{8})?\.$NAMESPACE\.crowd-" || true)"
expect_eq "crowd-17's ACLs on the broker" "" "$(acls_of "$crowd17")"
