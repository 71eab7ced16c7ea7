#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
out=$(k create --dry-run=server -f - 2>&1 <<'Y') || fail "jurisdiction on the r2 backend was rejected: $out"
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: eu-data}
spec: {backend: r2, name: "${namespace}-eu-data", parameters: {jurisdiction: eu}}
Y
out=$(k create --dry-run=server -f - 2>&1 <<'Y') && fail "jurisdiction on a non-r2 backend was admitted"
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: eu-data}
spec: {backend: s3, name: "${namespace}-eu-data", parameters: {jurisdiction: eu}}
Y
expect_contains "rejection names the implementation" "jurisdiction is only supported for implementation r2, and the backend's implementation is $IMPLEMENTATION" "$out"
step "lifecycle is allowed on r2, versioning is not (R2 has no object versioning)"
out=$(k create --dry-run=server -f - 2>&1 <<'Y') || fail "lifecycle on the r2 backend was rejected: $out"
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: expiring}
spec: {backend: r2, name: "${namespace}-expiring", parameters: {lifecycle: '{"expirationDays": 7}'}}
Y
out=$(k create --dry-run=server -f - 2>&1 <<'Y') && fail "versioning on the r2 backend was admitted"
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: versioned}
spec: {backend: r2, name: "${namespace}-versioned", parameters: {versioning: "true"}}
Y
expect_contains "rejection names the implementation" "versioning is only supported for implementation aws, minio, versitygw, seaweedfs, and the backend's implementation is r2" "$out"
