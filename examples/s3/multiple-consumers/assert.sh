#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3

# multiple_consumers_scoped ACCESS...: the status names each access's key;
# the keys differ, and none is the server's root key.
multiple_consumers_scoped() {
  local a
  for a in "$@"; do expect_principal_of "$a" "$a"; done
  [ "$(secret_value assets-writer accessKeyID)" != "$(secret_value assets-reader accessKeyID)" ] || fail "both accesses got the same key"
  [ "$(secret_value assets-writer accessKeyID)" != "$E2E_S3_ADMIN_ACCESS_KEY" ] || fail "an access got the server's root key"
}

multiple_consumers_unscoped() { expect_eq "identical accessKeyID" "$(secret_value assets-writer accessKeyID)" "$(secret_value assets-reader accessKeyID)"; }

multiple_consumers_probed() {
  if scoped_s3; then
    probe_refused assets-reader reader-writes ReadWrite 'AccessDenied'
  fi
}
multiple_consumers assets "endpoint bucket" assets-writer:ReadWrite assets-reader:ReadOnly
