#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
claims_and_outage s3-outage "$NAMESPACE-contested" "S3 server"
