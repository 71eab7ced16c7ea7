#!/usr/bin/env bash
# e2e: exclusive (uninstalls buckety: stops the controller, deletes its CRDs and every record)
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
reinstall orders orders-topic kafka_admin
