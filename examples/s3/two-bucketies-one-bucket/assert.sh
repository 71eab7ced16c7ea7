#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
bucket_exists() { s3_admin "$1" exists "$2"; }
# shellcheck disable=SC2016 # ${namespace} is a buckety name template
two_on_one s3 "$NAMESPACE-shared" '${namespace}-admin' admin-bucket bucket_exists
