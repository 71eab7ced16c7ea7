#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
# shellcheck disable=SC2034 # misconfigured_startup reads it by name
declare -A own=(
  [unknown-implementation]='backends[0].config.implementation: Unsupported value: "ceph": supported values: "aws", "r2", "minio", "versitygw", "seaweedfs"'
  [missing-field]='backends[0].config.endpoint: Required value'
)
misconfigured_startup own
