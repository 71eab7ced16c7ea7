#!/usr/bin/env bash
# Writes the broker of the local environment (E2E_BACKENDS_ENV, written by
# `make e2e`) into buckety-controller.yaml, its superuser's password into
# credentials.env, and into settings.env what the scenarios need to know:
# that accesses get users of their own, and the operator's login for
# out-of-band changes (lib.sh kafka_admin).
set -euo pipefail
: "${E2E_BACKENDS_ENV:?set E2E_BACKENDS_ENV to the backends file of the local environment}"
get() { sed -n "s/^$1=//p" "$E2E_BACKENDS_ENV"; }
# The outage twin claims-and-outage hangs (backend kafka-outage).
[ -n "$(get OUTAGE_KAFKA_BOOTSTRAP)" ] || { echo "kfake overlay: no OUTAGE_KAFKA_BOOTSTRAP in $E2E_BACKENDS_ENV: start the environment with buckety-local up --outage-twins (local.sh does)" >&2; exit 1; }
bootstrap=$(get KAFKA_BOOTSTRAP)
password=$(get KAFKA_PASSWORD)
[ -n "$password" ] || { echo "kfake overlay: $E2E_BACKENDS_ENV has no KAFKA_PASSWORD (a broker started before it enforced SASL: make stop-e2e, then make e2e)" >&2; exit 1; }
sed -i -e "s|@KAFKA_BOOTSTRAP@|$bootstrap|" -e "s|@OUTAGE_KAFKA_BOOTSTRAP@|$(get OUTAGE_KAFKA_BOOTSTRAP)|" buckety-controller.yaml
printf 'KAFKA_PASSWORD=%s\n' "$password" > credentials.env
printf 'E2E_KAFKA_SCOPED=true\nE2E_KAFKA_BOOTSTRAP=%s\nE2E_KAFKA_ADMIN_USER=buckety\nE2E_KAFKA_ADMIN_PASSWORD=%s\n' "$bootstrap" "$password" > settings.env
