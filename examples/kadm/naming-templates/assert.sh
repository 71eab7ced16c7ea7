#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm

# naming_templates_resolved NAME: the Secret names it; a label change
# renames nothing.
naming_templates_resolved() {
  expect_eq "Secret topic" "$1" "$(secret_value orders-topic topic)"
  step "a label change renames nothing"
  k label buckety orders yolean.se/generation=004 --overwrite >/dev/null
  sleep 3
  expect_eq "frozen name" "$1" "$(jp buckety/orders '{.status.backendResourceName}')"
}
naming_templates orders "$NAMESPACE.orders.v003.local" yolean.se/generation "\${namespace}.\${name}.v\${label['yolean.se/generation']}"
