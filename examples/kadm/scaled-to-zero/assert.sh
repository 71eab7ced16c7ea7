#!/usr/bin/env bash
# e2e: exclusive (scales the controller to zero)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/stream Ready True
probe stream-topic before
trap 'scale_controller 1' EXIT
step "scale the controller to zero"
scale_controller 0
probe stream-topic while-down
