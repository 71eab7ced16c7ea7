#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/orders Ready True
want="$NAMESPACE.orders.v003.local"
expect_eq "resolved name" "$want" "$(jp buckety/orders '{.status.backendResourceName}')"
expect_eq "Secret topic" "$want" "$(secret_value orders-topic topic)"
step "a label change renames nothing"
k label buckety orders yolean.se/generation=004 --overwrite >/dev/null
sleep 3
expect_eq "frozen name" "$want" "$(jp buckety/orders '{.status.backendResourceName}')"
step "a missing label is rejected at admission"
rejected "template with a missing label" 'the Buckety has no label "yolean.se/generation"' <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: unlabelled}
spec:
  backend: kafka
  name: "${namespace}.${name}.v${label['yolean.se/generation']}"
Y
