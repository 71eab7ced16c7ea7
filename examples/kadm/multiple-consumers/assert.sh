#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm

# multiple_consumers_scoped ACCESS...: three users, the reader's group
# prefix, one BucketyCredential on record for each access.
multiple_consumers_scoped() {
  local users a uid
  users="$(secret_value events-writer sasl.username) $(secret_value events-reader sasl.username) $(secret_value events-producer sasl.username)"
  # shellcheck disable=SC2086 # one user a line
  expect_eq "three distinct users" 3 "$(printf '%s\n' $users | sort -u | wc -l | tr -d ' ')"
  expect_contains "the reader's group prefix ends with its consumerGroupPrefix" "reporting-" "$(secret_value events-reader group.id.prefix)"
  for a in "$@"; do
    uid=$(jp "bucketyaccess/$a" '{.metadata.uid}')
    expect_eq "$a: one BucketyCredential on record" 1 "$("$KUBECTL" get bucketycredentials -l "buckety.yolean.se/owner-uid=$uid" -o name | wc -l | tr -d ' ')"
  done
}
multiple_consumers events "topic bootstrap" events-writer:ReadWrite events-reader:ReadOnly events-producer:WriteOnly
