#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/kept Ready True
wait_cond buckety/doomed Ready True
k create secret generic admin --from-literal=endpoint="$(secret_value kept-bucket endpoint)" --from-literal=region="$(secret_value kept-bucket region)" \
  --from-literal=accessKeyID="$(secret_value kept-bucket accessKeyID)" --from-literal=secretAccessKey="$(secret_value kept-bucket secretAccessKey)" >/dev/null
s3_admin admin put-many "$NAMESPACE-kept" 10 >/dev/null
s3_admin admin put-many "$NAMESPACE-doomed" 3000 >/dev/null
s3_admin admin put-many "$NAMESPACE-doomed" 500 >/dev/null # overwrites: noncurrent versions
step "delete both"
k delete buckety kept doomed --wait=false >/dev/null
step "progress is visible while the bucket empties"
deadline=$((SECONDS + E2E_TIMEOUT)); seen=
while k get buckety doomed >/dev/null 2>&1; do
  msg=$(cond buckety/doomed Ready message)
  case "$msg" in *"removed so far"*) seen=$msg ;; esac
  [ $SECONDS -lt $deadline ] || fail "the Buckety with Delete did not go away; last Ready message: $msg"
  sleep 0.5
done
[ -n "$seen" ] || fail "expected deletion progress in the Ready condition, never saw it"
echo "progress seen: $seen"
wait_gone buckety/kept
expect_eq "Delete removed the bucket" "false" "$(s3_admin admin exists "$NAMESPACE-doomed" | tail -1)"
expect_eq "Retain kept the bucket" "true" "$(s3_admin admin exists "$NAMESPACE-kept" | tail -1)"
expect_eq "Retain kept the objects" "10" "$(s3_admin admin count "$NAMESPACE-kept" | tail -1)"
