#!/usr/bin/env bash
# e2e: exclusive (scales the controller to zero)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/blobs Ready True
trap 'scale_controller 1' EXIT
scale_controller 0
probe blobs-bucket while-down
