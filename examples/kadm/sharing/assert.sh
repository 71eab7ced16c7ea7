#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
sharing orders orders-topic "$NAMESPACE.orders" topic
