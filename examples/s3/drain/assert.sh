#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
bucket="$NAMESPACE-scratch"
wait_cond buckety/scratch Ready True Reconciled
wait_cond bucketyaccess/scratch Ready True
step "fill the bucket with 3,000 objects (three DeleteObjects batches)"
s3_admin scratch-bucket put-many "$bucket" 3000 >/dev/null
expect_eq "objects before the drain" 3000 "$(s3_admin scratch-bucket count-all "$bucket" | tail -1)"
step "drain it"
k patch buckety scratch --type=merge -p '{"spec":{"drain":{"request":"e2e-1"}}}' >/dev/null
k wait --for=jsonpath='{.status.drain.phase}'=Drained buckety/scratch --timeout="${E2E_TIMEOUT}s" >/dev/null ||
  fail "drain e2e-1: expected Drained, seen $(jp buckety/scratch '{.status.drain}')"
expect_eq "objects after the drain" 0 "$(s3_admin scratch-bucket count-all "$bucket" | tail -1)"
expect_eq "the bucket is kept" true "$(s3_admin scratch-bucket exists "$bucket" | tail -1)"
expect_eq "status.drain.deleted.objects" 3000 "$(jp buckety/scratch '{.status.drain.deleted.objects}')"
wait_cond buckety/scratch Draining False Drained
wait_cond buckety/scratch Ready True
describe_out=$(k describe buckety scratch)
expect_contains "kubectl describe" "e2e-1" "$describe_out"
expect_contains "kubectl describe" "Drained" "$describe_out"
expect_contains "the DrainCompleted event" "deleted 3000 objects" "$(k get events.events.k8s.io -o jsonpath='{.items[?(@.reason=="DrainCompleted")].note}')"
step "the bucket still works"
probe scratch-bucket after-drain
