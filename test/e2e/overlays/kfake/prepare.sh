#!/usr/bin/env bash
# Writes the broker address of the local environment (E2E_BACKENDS_ENV,
# written by `make e2e`) into buckety-controller.yaml.
set -euo pipefail
: "${E2E_BACKENDS_ENV:?set E2E_BACKENDS_ENV to the backends file of the local environment}"
bootstrap=$(sed -n 's/^KAFKA_BOOTSTRAP=//p' "$E2E_BACKENDS_ENV")
sed -i "s|@KAFKA_BOOTSTRAP@|$bootstrap|" buckety-controller.yaml
: > credentials.env
