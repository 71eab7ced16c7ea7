#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3

retention_fill() {
  s3_admin admin put-many "$NAMESPACE-kept" 10 >/dev/null
  s3_admin admin put-many "$NAMESPACE-doomed" 3000 >/dev/null
  s3_admin admin put-many "$NAMESPACE-doomed" 500 >/dev/null # overwrites: noncurrent versions
}

retention_deleting() {
  local deadline msg seen=
  step "progress is visible while the bucket empties"
  deadline=$((SECONDS + E2E_BULK_TIMEOUT))
  while k get buckety doomed >/dev/null 2>&1; do
    msg=$(cond buckety/doomed Ready message)
    case "$msg" in *"removed so far"*) seen=$msg ;; esac
    [ $SECONDS -lt $deadline ] || fail "the Buckety with Delete did not go away; last Ready message: $msg"
    sleep 0.5
  done
  [ -n "$seen" ] || fail "expected deletion progress in the Ready condition, never saw it"
  echo "progress seen: $seen"
}

retention_after() { expect_eq "Retain kept the objects" "10" "$(s3_admin admin count "$NAMESPACE-kept" | tail -1)"; }
retention_policy kept "$NAMESPACE-kept" doomed "$NAMESPACE-doomed"
