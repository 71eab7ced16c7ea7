#!/usr/bin/env bash
# Writes the versitygw server of the local environment (E2E_BACKENDS_ENV) into
# buckety-controller.yaml and its keys into credentials.env.
set -euo pipefail
: "${E2E_BACKENDS_ENV:?set E2E_BACKENDS_ENV to the backends file of the local environment}"
get() { sed -n "s/^$1=//p" "$E2E_BACKENDS_ENV"; }
sed -i -e "s|@ENDPOINT@|$(get VERSITYGW_ENDPOINT)|" -e "s|@REGION@|$(get VERSITYGW_REGION)|" buckety-controller.yaml
printf 'S3_ACCESS_KEY_ID=%s\nS3_SECRET_ACCESS_KEY=%s\n' "$(get VERSITYGW_ACCESS_KEY)" "$(get VERSITYGW_SECRET_KEY)" > credentials.env
