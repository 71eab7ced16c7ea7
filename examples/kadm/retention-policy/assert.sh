#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
retention_policy kept "$NAMESPACE.kept" dropped "$NAMESPACE.dropped"
