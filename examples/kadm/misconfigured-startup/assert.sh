#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
declare -A want=(
  [strict-decode]='backends[0].drvier: unknown field "drvier"'
  [undefined-variable]='backends[0].config.accessKeyID: Invalid value: environment variable E2E_UNSET_ACCESS_KEY is not set'
  [unknown-driver]='backends[0].driver: Invalid value: "mysql": unknown driver; this build has: kadm, s3'
  [duplicate-backends]='backends[1].name: Duplicate value'
  [missing-field]='backends[0].config.seedBrokers: Required value'
)
expect_startup_failures want
