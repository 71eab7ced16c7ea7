#!/usr/bin/env bash
# e2e: exclusive (scales the controller to zero)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
# shellcheck disable=SC2016 # ${namespace} is the Buckety's template, not the shell's
webhook_controller_down '"s3", "r2"' s4 '{backend: s3, name: "${namespace}-b3", parameters: {versioning: "maybe"}}' 'spec.parameters[versioning]' '{"region":"eu-north-1"}'
