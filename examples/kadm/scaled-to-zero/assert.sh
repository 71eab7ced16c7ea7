#!/usr/bin/env bash
# e2e: exclusive (scales the controller to zero)
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
scaled_to_zero stream stream-topic
