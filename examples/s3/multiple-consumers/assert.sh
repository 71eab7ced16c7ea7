#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/assets Ready True
for a in assets-writer assets-reader; do
  wait_cond "bucketyaccess/$a" Ready True
  expect_secret_keys "$a" s3 region
done
for key in endpoint bucket; do
  expect_eq "identical $key" "$(secret_value assets-writer $key)" "$(secret_value assets-reader $key)"
done
if scoped_s3; then
  step "every access has a key of its own, with its role's rights"
  for a in assets-writer assets-reader; do
    wait_cond "bucketyaccess/$a" ScopingNotImplemented False AsExpected
    expect_principal_of "$a" "$a"
  done
  [ "$(secret_value assets-writer accessKeyID)" != "$(secret_value assets-reader accessKeyID)" ] || fail "both accesses got the same key"
  [ "$(secret_value assets-writer accessKeyID)" != "$E2E_S3_ADMIN_ACCESS_KEY" ] || fail "an access got the server's root key"
else
  step "identical keys: scoping is reported, not pretended"
  for a in assets-writer assets-reader; do
    wait_cond "bucketyaccess/$a" ScopingNotImplemented True CredentialsNotScoped
  done
  expect_eq "identical accessKeyID" "$(secret_value assets-writer accessKeyID)" "$(secret_value assets-reader accessKeyID)"
fi
step "every Secret works for its role (and, with keys of their own, for nothing more)"
probe assets-writer writer ReadWrite
probe assets-reader reader ReadOnly
if scoped_s3; then
  probe_refused assets-reader reader-writes ReadWrite 'AccessDenied'
fi
