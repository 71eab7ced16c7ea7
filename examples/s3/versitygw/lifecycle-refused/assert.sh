#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
lifecycle_refused 'versioning: "true"'
expect_eq "versioning applied" "Enabled" "$(s3_admin logs-bucket versioning "$NAMESPACE-logs" | tail -1)"
