#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
sharing files files-bucket "$NAMESPACE-files" bucket
