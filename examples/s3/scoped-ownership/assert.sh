#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
scoped_s3 || fail "this scenario needs a backend that mints keys per access (E2E_S3_SCOPED=true)"
bucket="$NAMESPACE-vault"
ops='{"Sid":"ops-public","Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::'"$bucket"'/public/*"]}'
policy() { s3_admin vault-bucket policy "$bucket" | tail -1; }

wait_cond buckety/vault Ready True
wait_cond bucketyaccess/vault-writer Ready True
wait_cond bucketyaccess/vault-reader Ready True
probe vault-reader reader ReadOnly

step "the operator replaces the bucket policy with a statement of its own"
s3_admin vault-bucket set-policy "$bucket" '{"Version":"2012-10-17","Statement":['"$ops"']}'
if [ "$IMPLEMENTATION" = versitygw ]; then
  # buckety's statements are gone with it: the drift sweep puts them back beside the operator's.
  restored() { local p; p=$(policy); [[ "$p" == *buckety-ReadOnly-objects* && "$p" == *buckety-ReadWrite-objects* && "$p" == *ops-public* ]]; }
  eventually "buckety's statements restored beside the operator's" restored
fi
probe vault-reader reader-after-drift ReadOnly
step "a rotation grants again; the operator's statement stays"
rotate vault-reader 2026-11-24
p=$(policy)
expect_contains "the operator's statement after a rotation" '"ops-public"' "$p"
expect_contains "the operator's resource after a rotation" "arn:aws:s3:::$bucket/public/*" "$p"
if [ "$IMPLEMENTATION" = minio ] || [ "$IMPLEMENTATION" = seaweedfs ]; then
  expect_not_contains "buckety writes no bucket policy on $IMPLEMENTATION" "buckety-" "$p"
fi
probe vault-reader reader-rotated ReadOnly

if [ "$IMPLEMENTATION" = minio ] || [ "$IMPLEMENTATION" = seaweedfs ]; then
  step "the operator widens the reader's key to every bucket; the drift sweep narrows it back"
  reader=$(secret_value vault-reader accessKeyID)
  # Where IAM issues keys the policy is the user's, not the key's.
  if issued_s3; then reader=$(jp bucketyaccess/vault-reader '{.status.principal}'); fi
  s3_admin vault-bucket set-key-policy "$reader" '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}'
  narrowed() { local p; p=$(s3_admin vault-bucket key-policy "$reader" | tail -1); [[ "$p" != *'"s3:*"'* && "$p" == *"arn:aws:s3:::$bucket"* ]]; }
  eventually "the reader's policy narrowed back to its bucket" narrowed
  probe_refused vault-reader reader-writes-after-repair ReadWrite 'AccessDenied'
fi

step "a key someone else created with buckety's name for an access is never touched"
marker=$(installation_marker) || fail "cannot read namespace kube-system's UID"
key_of() { echo "bky$marker-$(printf %s "$1" | sha256sum | cut -c1-12)-1"; }
# The squatter's key and secret: the ones asked for, or where IAM issues
# keys (the principal is then a user of that name) the ones IAM issued,
# which key-add prints on its last line.
squatter_key="" squatter_secret=TheirOwnSecret0123456789
add_key() {
  local out
  out=$(s3_admin vault-bucket key-add "$1" "$squatter_secret")
  printf '%s\n' "$out"
  squatter_key=$1
  if issued_s3; then read -r squatter_key squatter_secret <<<"$(printf '%s\n' "$out" | tail -1)"; fi
}
squatted_access annex "{backend: s3, name: \"$NAMESPACE-annex\"}" key_of add_key
squatter=$SQUATTER
[ -n "$squatter_key" ] && [ -n "$squatter_secret" ] || fail "key-add did not leave the squatter's key and secret"
k create secret generic squatter --from-literal=endpoint="$(secret_value vault-bucket endpoint)" --from-literal=region="$(secret_value vault-bucket region)" \
  --from-literal=bucket="$NAMESPACE-annex" --from-literal=accessKeyID="$squatter_key" --from-literal=secretAccessKey="$squatter_secret" >/dev/null
# Known to the server with its own secret: refused authorization, not authentication.
probe_refused squatter squatter-still-authenticates WriteOnly 'AccessDenied'
k delete bucketyaccess squatted --wait=true >/dev/null
expect_eq "the foreign key survives the access's deletion" true "$(s3_admin vault-bucket key-exists "$squatter" | tail -1)"
wait_cond buckety/annex Ready True
