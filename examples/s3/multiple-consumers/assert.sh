#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/assets Ready True
for a in assets-writer assets-reader; do
  wait_cond "bucketyaccess/$a" Ready True
  wait_cond "bucketyaccess/$a" ScopingNotImplemented True CredentialsNotScoped
  expect_secret_keys "$a" s3 region
done
for key in endpoint bucket accessKeyID; do
  expect_eq "identical $key" "$(secret_value assets-writer $key)" "$(secret_value assets-reader $key)"
done
probe assets-writer writer
probe assets-reader reader
