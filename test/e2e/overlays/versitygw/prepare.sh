#!/usr/bin/env bash
# Writes the versitygw server of the local environment (E2E_BACKENDS_ENV) into
# buckety-controller.yaml, its keys into credentials.env, and into
# settings.env what the scenarios need to know: that accesses get keys of
# their own, and the operator's keys for out-of-band changes (lib.sh
# s3_admin).
set -euo pipefail
: "${E2E_BACKENDS_ENV:?set E2E_BACKENDS_ENV to the backends file of the local environment}"
get() { sed -n "s/^$1=//p" "$E2E_BACKENDS_ENV"; }
# The outage twin claims-and-outage hangs (backend s3-outage).
[ -n "$(get OUTAGE_VERSITYGW_ENDPOINT)" ] || { echo "versitygw overlay: no OUTAGE_VERSITYGW_ENDPOINT in $E2E_BACKENDS_ENV: start the environment with buckety-local up --outage-twins (local.sh does)" >&2; exit 1; }
sed -i -e "s|@ENDPOINT@|$(get VERSITYGW_ENDPOINT)|" -e "s|@REGION@|$(get VERSITYGW_REGION)|" -e "s|@ADMIN_ENDPOINT@|$(get VERSITYGW_ADMIN_ENDPOINT)|" -e "s|@OUTAGE_ENDPOINT@|$(get OUTAGE_VERSITYGW_ENDPOINT)|" -e "s|@OUTAGE_ADMIN_ENDPOINT@|$(get OUTAGE_VERSITYGW_ADMIN_ENDPOINT)|" buckety-controller.yaml
printf 'S3_ACCESS_KEY_ID=%s\nS3_SECRET_ACCESS_KEY=%s\n' "$(get VERSITYGW_ACCESS_KEY)" "$(get VERSITYGW_SECRET_KEY)" > credentials.env
printf 'E2E_S3_SCOPED=true\nE2E_S3_ADMIN_ACCESS_KEY=%s\nE2E_S3_ADMIN_SECRET_KEY=%s\nE2E_S3_ADMIN_ENDPOINT=%s\n' "$(get VERSITYGW_ACCESS_KEY)" "$(get VERSITYGW_SECRET_KEY)" "$(get VERSITYGW_ADMIN_ENDPOINT)" > settings.env
