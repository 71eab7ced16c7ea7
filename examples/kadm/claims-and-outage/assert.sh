#!/usr/bin/env bash
# e2e: exclusive (hangs the backend's process)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
claims_and_outage kafka "$NAMESPACE.contested" "broker"
