#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/helper Ready True
bucket="$NAMESPACE.legacy"
s3_admin helper-bucket create "$bucket" 3 >/dev/null
s3_admin helper-bucket set-versioning "$bucket" Enabled >/dev/null

step "the webhook rejects spec.adoption on a backend that does not allow it"
rejected "adoption without the maintainer's key" 'spec.adoption: Forbidden: Adopt is not allowed on backend "s3"' <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: sneaky}
spec: {backend: s3, name: "$NAMESPACE-sneaky", adoption: Adopt}
Y

step "Adopt: the differences are reported, nothing is applied"
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: legacy}
spec:
  backend: s3-adopt
  name: "\${namespace}.legacy"
  adoption: Adopt
  parameters: {versioning: "false"}
  defaultAccess: {credentialsSecretName: legacy-bucket}
Y
wait_cond buckety/legacy Ready False AdoptionDrift
expect_contains "drift lists versioning" "versioning Enabled -> Suspended" "$(cond buckety/legacy Ready message)"
sleep 3
expect_eq "versioning untouched" "Enabled" "$(s3_admin helper-bucket versioning "$bucket" | tail -1)"

step "AdoptAndConverge: applied, content kept"
k patch buckety legacy --type=merge -p '{"spec":{"adoption":"AdoptAndConverge"}}' >/dev/null
wait_cond buckety/legacy Ready True
expect_eq "provenance" "Adopted" "$(jp buckety/legacy '{.status.provenance}')"
expect_eq "versioning converged" "Suspended" "$(s3_admin helper-bucket versioning "$bucket" | tail -1)"
expect_eq "objects kept" "3" "$(s3_admin helper-bucket count "$bucket" | tail -1)"
k get events --field-selector reason=AdoptionConverging -o name | grep -q . || fail "expected an AdoptionConverging event"
probe legacy-bucket adopted >/dev/null

step "retentionPolicy Delete keeps an adopted bucket"
k patch buckety legacy --type=merge -p '{"spec":{"retentionPolicy":"Delete"}}' >/dev/null
k delete buckety legacy --wait=false >/dev/null
wait_gone buckety/legacy
expect_eq "adopted bucket kept" "true" "$(s3_admin helper-bucket exists "$bucket" | tail -1)"
