#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
declare -A want=(
  [strict-decode]='backends[0].drvier: unknown field "drvier"'
  [undefined-variable]='backends[0].config.accessKeyID: Invalid value: environment variable E2E_UNSET_ACCESS_KEY is not set'
  [unknown-driver]='backends[0].driver: Invalid value: "mysql": unknown driver; this build has: kadm, s3'
  [unknown-implementation]='backends[0].config.implementation: Unsupported value: "ceph": supported values: "aws", "r2", "minio", "versitygw", "seaweedfs"'
  [missing-field]='backends[0].config.endpoint: Required value'
)
expect_startup_failures want
