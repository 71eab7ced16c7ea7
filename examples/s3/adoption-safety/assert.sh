#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
adoption_safety claims claims-bucket "$NAMESPACE-preexisting" object "no object key of a bucket not yet owned"
