#!/usr/bin/env bash
# Writes the seaweedfs server of the local environment (E2E_BACKENDS_ENV) into
# buckety-controller.yaml, its keys into credentials.env, and into
# settings.env what the scenarios need to know: that accesses get keys of
# their own, that IAM issues them (the Secret's accessKeyID is the key IAM
# gave the access's user, not the principal), and the operator's keys for
# out-of-band changes (lib.sh s3_admin; IAM is on the S3 endpoint, so no
# admin endpoint).
set -euo pipefail
: "${E2E_BACKENDS_ENV:?set E2E_BACKENDS_ENV to the backends file of the local environment}"
get() { sed -n "s/^$1=//p" "$E2E_BACKENDS_ENV"; }
# The outage twin claims-and-outage hangs (backend s3-outage).
[ -n "$(get OUTAGE_SEAWEEDFS_ENDPOINT)" ] || { echo "seaweedfs overlay: no OUTAGE_SEAWEEDFS_ENDPOINT in $E2E_BACKENDS_ENV: start the environment with buckety-local up --outage-twins (local.sh does)" >&2; exit 1; }
# The local environment starts SeaweedFS only when asked (local.sh passes
# --seaweedfs when IMPLEMENTATIONS names it): say so rather than deploy an
# empty endpoint.
[ -n "$(get SEAWEEDFS_ENDPOINT)" ] || { echo "seaweedfs: no SEAWEEDFS_ENDPOINT in $E2E_BACKENDS_ENV: start the environment with buckety-local up --seaweedfs" >&2; exit 1; }
sed -i -e "s|@ENDPOINT@|$(get SEAWEEDFS_ENDPOINT)|" -e "s|@OUTAGE_ENDPOINT@|$(get OUTAGE_SEAWEEDFS_ENDPOINT)|" -e "s|@REGION@|$(get SEAWEEDFS_REGION)|" buckety-controller.yaml
printf 'S3_ACCESS_KEY_ID=%s\nS3_SECRET_ACCESS_KEY=%s\n' "$(get SEAWEEDFS_ACCESS_KEY)" "$(get SEAWEEDFS_SECRET_KEY)" > credentials.env
printf 'E2E_S3_SCOPED=true\nE2E_S3_ISSUED_KEYS=true\nE2E_S3_ADMIN_ACCESS_KEY=%s\nE2E_S3_ADMIN_SECRET_KEY=%s\n' "$(get SEAWEEDFS_ACCESS_KEY)" "$(get SEAWEEDFS_SECRET_KEY)" > settings.env
