#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
topic_exists() { kafka_admin "$1" exists "$2"; }
# shellcheck disable=SC2016 # ${namespace} is a buckety name template
two_on_one kafka "$NAMESPACE.shared" '${namespace}.admin' admin-topic topic_exists
