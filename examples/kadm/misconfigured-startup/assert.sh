#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
# shellcheck disable=SC2034 # misconfigured_startup reads it by name
declare -A own=(
  [duplicate-backends]='backends[1].name: Duplicate value'
  [missing-field]='backends[0].config.seedBrokers: Required value'
)
misconfigured_startup own
