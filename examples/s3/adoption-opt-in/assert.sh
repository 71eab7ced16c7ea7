#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
bucket="$NAMESPACE.legacy"

adoption_prepare() { s3_admin helper-bucket set-versioning "$1" Enabled >/dev/null; }

# adoption_drift BUCKET: with Adopt, the differences are reported and
# nothing is applied.
adoption_drift() {
  step "Adopt: the differences are reported, nothing is applied"
  k apply -f - >/dev/null <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: legacy}
spec:
  backend: s3-adopt
  name: "${namespace}.legacy"
  adoption: Adopt
  parameters: {versioning: "false"}
  defaultAccess: {credentialsSecretName: legacy-bucket}
Y
  wait_cond buckety/legacy Ready False AdoptionDrift
  expect_contains "drift lists versioning" "versioning Enabled -> Suspended" "$(cond buckety/legacy Ready message)"
  sleep 3
  expect_eq "versioning untouched" "Enabled" "$(s3_admin helper-bucket versioning "$1" | tail -1)"
}

# adoption_settle BUCKET: AdoptAndConverge.
adoption_settle() {
  step "AdoptAndConverge: applied, content kept"
  k patch buckety legacy --type=merge -p '{"spec":{"adoption":"AdoptAndConverge"}}' >/dev/null
}

# adoption_settled BUCKET: the spec was applied; the objects are kept.
adoption_settled() {
  expect_eq "versioning converged" "Suspended" "$(s3_admin helper-bucket versioning "$1" | tail -1)"
  expect_eq "objects kept" "3" "$(s3_admin helper-bucket count "$1" | tail -1)"
  grep -q . <<<"$(k get events --field-selector reason=AdoptionConverging -o name)" || fail "expected an AdoptionConverging event"
}
adoption_opt_in "$bucket" "$NAMESPACE-sneaky"
