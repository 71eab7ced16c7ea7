#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/reports Ready True
expect_eq "resolved name" "$NAMESPACE-reports-v007-local" "$(jp buckety/reports '{.status.backendResourceName}')"
rejected "invalid resolved name" 'which driver s3 rejects' <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: bad-name}
spec: {backend: s3, name: "${namespace}_${name}"}
Y
rejected "missing label" 'the Buckety has no label "team"' <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: unlabelled}
spec: {backend: s3, name: "${label['team']}-x"}
Y
