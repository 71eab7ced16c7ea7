#!/usr/bin/env bash
# e2e: exclusive (rolls the controller to other images)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
versioning_unchanged() { expect_eq "no backend writes" "Enabled" "$(s3_admin versioned-bucket versioning "$NAMESPACE-versioned" | tail -1)"; }
driver_version s3 '{"versioning":"false"}' versioning_unchanged
