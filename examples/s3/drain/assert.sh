#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3

# drain_drained: kubectl describe and the DrainCompleted event tell of it.
# 3,000 objects take three DeleteObjects batches.
drain_drained() {
  local describe_out
  describe_out=$(k describe buckety scratch)
  expect_contains "kubectl describe" "e2e-1" "$describe_out"
  expect_contains "kubectl describe" "Drained" "$describe_out"
  expect_contains "the DrainCompleted event" "deleted 3000 objects" "$(k get events.events.k8s.io -o jsonpath='{.items[?(@.reason=="DrainCompleted")].note}')"
}
drain scratch scratch-bucket "$NAMESPACE-scratch" e2e-1 3000
