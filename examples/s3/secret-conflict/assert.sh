#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond bucketyaccess/orders Ready False SecretConflict
expect_contains "conflict message" "Secret orders-bucket already exists and was not created by buckety" "$(cond bucketyaccess/orders Ready message)"
wait_cond buckety/orders Ready False AccessesNotReady
sleep 3
expect_eq "foreign Secret untouched" "password" "$(secret_keys orders-bucket)"
expect_eq "foreign value untouched" "not-buckety-s" "$(secret_value orders-bucket password)"
step "the owner removes it; buckety writes its own"
k delete secret orders-bucket >/dev/null
wait_cond bucketyaccess/orders Ready True
wait_cond buckety/orders Ready True
expect_secret_keys orders-bucket s3 region
