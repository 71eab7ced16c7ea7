#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
bucket="$NAMESPACE-ledger"

drift_change() { s3_admin ledger-bucket set-versioning "$bucket" Suspended >/dev/null; }

# drift_reverted: versioning is Enabled again.
drift_reverted() {
  DRIFT_SEEN=$(s3_admin ledger-bucket versioning "$bucket" | tail -1)
  [ "$DRIFT_SEEN" = Enabled ]
}
out_of_band_drift ledger
