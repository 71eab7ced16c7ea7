#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/helper Ready True
s3_admin helper-bucket create "$NAMESPACE-preexisting" 3 >/dev/null
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: claims}
spec: {backend: s3, name: "$NAMESPACE-preexisting", defaultAccess: {credentialsSecretName: claims-bucket}}
Y
wait_cond buckety/claims Ready False AdoptionRefused
expect_contains "refusal" "$NAMESPACE-preexisting on backend s3 already exists and holds content" "$(cond buckety/claims Ready message)"
expect_not_contains "no object key of a bucket not yet owned" "object" "$(cond buckety/claims Ready message)"
expect_eq "nothing stamped" "" "$(jp buckety/claims '{.status.backendResourceName}')"
sleep 2
k get secret claims-bucket >/dev/null 2>&1 && fail "a Secret was written for a refused adoption"
true
