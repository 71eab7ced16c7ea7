#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/events Ready True
for a in events-writer events-reader events-producer; do
  wait_cond "bucketyaccess/$a" Ready True
  expect_secret_keys "$a" kadm
done
step "identical credentials in v1alpha1"
expect_eq "reader vs writer topic" "$(secret_value events-writer topic)" "$(secret_value events-reader topic)"
expect_eq "reader vs writer bootstrap" "$(secret_value events-writer bootstrap)" "$(secret_value events-reader bootstrap)"
step "scoping is reported, not pretended"
wait_cond bucketyaccess/events-writer ScopingNotImplemented True CredentialsNotScoped
wait_cond bucketyaccess/events-reader ScopingNotImplemented True CredentialsNotScoped
wait_cond bucketyaccess/events-producer ScopingNotImplemented True CredentialsNotScoped
wait_cond buckety/events ScopingNotImplemented True CredentialsNotScoped
step "no implicit access without defaultAccess"
k get bucketyaccess events >/dev/null 2>&1 && fail "an implicit access exists without defaultAccess"
step "every Secret works"
probe events-writer writer
probe events-reader reader
