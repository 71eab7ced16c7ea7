#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/events Ready True
for a in events-writer events-reader events-producer; do
  wait_cond "bucketyaccess/$a" Ready True
  expect_secret_keys "$a" kadm
done
expect_eq "reader vs writer topic" "$(secret_value events-writer topic)" "$(secret_value events-reader topic)"
expect_eq "reader vs writer bootstrap" "$(secret_value events-writer bootstrap)" "$(secret_value events-reader bootstrap)"
if scoped_kafka; then
  step "every access has a user of its own, with its role's rights"
  for a in events-writer events-reader events-producer; do
    wait_cond "bucketyaccess/$a" ScopingNotImplemented False AsExpected
  done
  wait_cond buckety/events ScopingNotImplemented False
  users="$(secret_value events-writer sasl.username) $(secret_value events-reader sasl.username) $(secret_value events-producer sasl.username)"
  expect_eq "three distinct users" 3 "$(printf '%s\n' $users | sort -u | wc -l | tr -d ' ')"
  expect_contains "the reader's group prefix ends with its consumerGroupPrefix" "reporting-" "$(secret_value events-reader group.id.prefix)"
  for a in events-writer events-reader events-producer; do
    uid=$(jp "bucketyaccess/$a" '{.metadata.uid}')
    expect_eq "$a: one BucketyCredential on record" 1 "$("$KUBECTL" get bucketycredentials -l "buckety.yolean.se/owner-uid=$uid" -o name | wc -l | tr -d ' ')"
  done
else
  step "identical credentials: scoping is reported, not pretended"
  for a in events-writer events-reader events-producer; do
    wait_cond "bucketyaccess/$a" ScopingNotImplemented True CredentialsNotScoped
  done
  wait_cond buckety/events ScopingNotImplemented True CredentialsNotScoped
fi
step "no implicit access without defaultAccess"
k get bucketyaccess events >/dev/null 2>&1 && fail "an implicit access exists without defaultAccess"
step "every Secret works for its role (and, scoped, for nothing more)"
probe events-writer writer ReadWrite
probe events-producer producer WriteOnly
probe events-reader reader ReadOnly
