#!/usr/bin/env bash
# e2e: exclusive (renames the backend in the controller's config and rolls the controller)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
versioning_unchanged() { expect_eq "no backend writes" "Enabled" "$(s3_admin sticky-bucket versioning "$NAMESPACE-sticky" | tail -1)"; }
backend_stickiness s3 '{"versioning":"false"}' versioning_unchanged sticky-bucket
