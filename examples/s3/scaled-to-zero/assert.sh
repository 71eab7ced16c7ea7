#!/usr/bin/env bash
# e2e: exclusive (scales the controller to zero)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
scaled_to_zero blobs blobs-bucket
