#!/usr/bin/env bash
# Writes the minio server of the local environment (E2E_BACKENDS_ENV) into
# buckety-controller.yaml and its keys into credentials.env.
set -euo pipefail
: "${E2E_BACKENDS_ENV:?set E2E_BACKENDS_ENV to the backends file of the local environment}"
get() { sed -n "s/^$1=//p" "$E2E_BACKENDS_ENV"; }
sed -i -e "s|@ENDPOINT@|$(get MINIO_ENDPOINT)|" -e "s|@REGION@|$(get MINIO_REGION)|" buckety-controller.yaml
printf 'S3_ACCESS_KEY_ID=%s\nS3_SECRET_ACCESS_KEY=%s\n' "$(get MINIO_ACCESS_KEY)" "$(get MINIO_SECRET_KEY)" > credentials.env
