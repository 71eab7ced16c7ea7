#!/usr/bin/env bash
# Writes the minio server of the local environment (E2E_BACKENDS_ENV) into
# buckety-controller.yaml, its keys into credentials.env, and into
# settings.env what the scenarios need to know: that accesses get keys of
# their own, and the operator's keys for out-of-band changes (lib.sh
# s3_admin).
set -euo pipefail
: "${E2E_BACKENDS_ENV:?set E2E_BACKENDS_ENV to the backends file of the local environment}"
get() { sed -n "s/^$1=//p" "$E2E_BACKENDS_ENV"; }
# The outage twin claims-and-outage hangs (backend s3-outage).
[ -n "$(get OUTAGE_MINIO_ENDPOINT)" ] || { echo "minio overlay: no OUTAGE_MINIO_ENDPOINT in $E2E_BACKENDS_ENV: start the environment with buckety-local up --outage-twins (local.sh does)" >&2; exit 1; }
sed -i -e "s|@ENDPOINT@|$(get MINIO_ENDPOINT)|" -e "s|@OUTAGE_ENDPOINT@|$(get OUTAGE_MINIO_ENDPOINT)|" -e "s|@REGION@|$(get MINIO_REGION)|" buckety-controller.yaml
printf 'S3_ACCESS_KEY_ID=%s\nS3_SECRET_ACCESS_KEY=%s\n' "$(get MINIO_ACCESS_KEY)" "$(get MINIO_SECRET_KEY)" > credentials.env
printf 'E2E_S3_SCOPED=true\nE2E_S3_ADMIN_ACCESS_KEY=%s\nE2E_S3_ADMIN_SECRET_KEY=%s\n' "$(get MINIO_ACCESS_KEY)" "$(get MINIO_SECRET_KEY)" > settings.env
