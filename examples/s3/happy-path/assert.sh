#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/files Ready True Reconciled
expect_eq "resolved name" "$NAMESPACE-files" "$(jp buckety/files '{.status.backendResourceName}')"
wait_cond bucketyaccess/files Ready True
expect_secret_keys files-bucket s3 region # the e2e backends have a region
expect_eq "Secret bucket" "$NAMESPACE-files" "$(secret_value files-bucket bucket)"
expect_eq "versioning on the server" "Enabled" "$(s3_admin files-bucket versioning "$NAMESPACE-files" | tail -1)"
if scoped_s3; then
  wait_cond bucketyaccess/files ScopingNotImplemented False AsExpected
else
  wait_cond bucketyaccess/files ScopingNotImplemented True CredentialsNotScoped
fi
probe files-bucket consumer

step "kubectl get bucketybackends lists the backend Ready"
# Cluster-scoped, read by anyone authenticated: NAME DRIVER IMPLEMENTATION
# PER-ACCESS-KEYS READY REASON ...
backend_listed() { "$KUBECTL" get bucketybackends | awk '$1 == "s3" && $2 == "s3" && / True +Reachable /' | grep -q .; }
eventually "kubectl get bucketybackends: s3 s3 ... True Reachable" backend_listed
