#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/first Ready True
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: second}
spec: {backend: s3, name: "$NAMESPACE-shared", retentionPolicy: Delete}
Y
wait_cond buckety/second Ready False NameConflict
expect_contains "conflict names the owner" "owned by Buckety $NAMESPACE/first" "$(cond buckety/second Ready message)"
k apply -f - >/dev/null <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: admin}
spec: {backend: s3, name: "${namespace}-admin", defaultAccess: {credentialsSecretName: admin-bucket}}
Y
wait_cond buckety/admin Ready True
k delete buckety second --wait=false >/dev/null
wait_gone buckety/second
expect_eq "the owner's bucket survives" "true" "$(run_pod "admin-$RANDOM" admin-bucket s3-admin exists "$NAMESPACE-shared" | tail -1)"
wait_cond buckety/first Ready True
