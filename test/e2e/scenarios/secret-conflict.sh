# secret_conflict SECRET: the secret-conflict scenario of every driver. The
# implicit access of buckety/orders is to write SECRET, which a tenant's
# Secret (one key, password) already holds: the access reports
# SecretConflict and leaves it alone; once the tenant deletes it, buckety
# writes its own, with the driver's keys.
secret_conflict() {
  local secret=$1
  wait_cond bucketyaccess/orders Ready False SecretConflict
  expect_contains "conflict message" "Secret $secret already exists and was not created by buckety" "$(cond bucketyaccess/orders Ready message)"
  wait_cond buckety/orders Ready False AccessesNotReady
  sleep 3
  expect_eq "foreign Secret untouched" "password" "$(secret_keys "$secret")"
  expect_eq "foreign value untouched" "not-buckety-s" "$(secret_value "$secret" password)"
  step "the owner removes it; buckety writes its own"
  k delete secret "$secret" >/dev/null
  wait_cond bucketyaccess/orders Ready True
  wait_cond buckety/orders Ready True
  expect_keys "$secret"
}
