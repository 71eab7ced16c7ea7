#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
claims_and_outage kafka-outage "$NAMESPACE.contested" "broker"
