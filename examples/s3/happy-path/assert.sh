#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3

# happy_path_backend NAME SECRET: the bucket is versioned; the access
# reports whether its key is its own.
happy_path_backend() {
  expect_eq "versioning on the server" "Enabled" "$(s3_admin "$2" versioning "$1" | tail -1)"
  if scoped_s3; then
    wait_cond bucketyaccess/files ScopingNotImplemented False AsExpected
  else
    wait_cond bucketyaccess/files ScopingNotImplemented True CredentialsNotScoped
  fi
}
happy_path files files-bucket "$NAMESPACE-files" bucket s3 s3
